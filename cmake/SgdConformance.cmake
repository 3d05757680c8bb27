#[=======================================================================[.rst:
SgdConformance
--------------

Registers an implementation of the SGD step as a ctest test that runs the
sgd-conformance suite against it.

.. command:: sgd_conformance_add_test

  ::

    sgd_conformance_add_test(<name>
      COMMAND <adapter command> [<arg>...]   # or IMPL builtin:NAME
      [CASES <n>] [SEED <s>] [TIMEOUT <seconds per case>]
      [PROPERTIES <property>...]
      [XFAILS <file>] [EXPECT conformant|not_conformant]
      [ARRAYS binary|base64]
      [LABELS <label>...] [WORKING_DIRECTORY <dir>]
      [ENVIRONMENT <VAR=value>...])

  The test runs ``sgd-conformance run --impl '<command>'`` and passes when the
  verdict is ``EXPECT`` (default ``conformant``). An adapter that exits with
  status 77 before its handshake (its framework is not installed) makes the test
  *skipped*, never passed. Reports are written next to the test:
  ``<name>.junit.xml`` and ``<name>.json`` in the current binary directory.
  ``PROPERTIES`` runs only the properties named (``--property``, repeated),
  for example the few that a known bug must fail.
  ``ARRAYS base64`` keeps the adapter on base64 arrays (protocol v1 as published)
  instead of offering binary ones (``--arrays``).
#]=======================================================================]

include_guard(GLOBAL)

function(sgd_conformance_add_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg ""
    "IMPL;CASES;SEED;TIMEOUT;XFAILS;EXPECT;ARRAYS;WORKING_DIRECTORY" "COMMAND;PROPERTIES;LABELS;ENVIRONMENT")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sgd_conformance_add_test(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET sgdc::cli)
    message(FATAL_ERROR "sgd_conformance_add_test(${name}): target sgdc::cli not found "
                        "(find_package(sgd_conformance) first)")
  endif()
  if(arg_IMPL AND arg_COMMAND)
    message(FATAL_ERROR "sgd_conformance_add_test(${name}): give COMMAND or IMPL, not both")
  elseif(arg_IMPL)
    set(impl "${arg_IMPL}")
  elseif(arg_COMMAND)
    # One shell word per argument, single-quoted, as the adapter runs under /bin/sh -c.
    set(impl "")
    foreach(word IN LISTS arg_COMMAND)
      string(REPLACE "'" "'\\''" word "${word}")
      string(APPEND impl " '${word}'")
    endforeach()
    string(STRIP "${impl}" impl)
  else()
    message(FATAL_ERROR "sgd_conformance_add_test(${name}): COMMAND or IMPL is required")
  endif()

  set(args run --impl "${impl}"
      --junit "${CMAKE_CURRENT_BINARY_DIR}/${name}.junit.xml"
      --json "${CMAKE_CURRENT_BINARY_DIR}/${name}.json")
  foreach(option CASES SEED TIMEOUT XFAILS EXPECT ARRAYS)
    if(DEFINED arg_${option})
      string(TOLOWER "${option}" flag)
      list(APPEND args "--${flag}" "${arg_${option}}")
    endif()
  endforeach()
  foreach(property IN LISTS arg_PROPERTIES)
    list(APPEND args --property "${property}")
  endforeach()
  if(NOT arg_WORKING_DIRECTORY)
    set(arg_WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  add_test(NAME ${name} COMMAND $<TARGET_FILE:sgdc::cli> ${args}
           WORKING_DIRECTORY "${arg_WORKING_DIRECTORY}")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS "sgd-conformance;${arg_LABELS}")
  if(arg_ENVIRONMENT)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${arg_ENVIRONMENT}")
  endif()
endfunction()
