# What fixtures generate --canonical and fixtures check print (docs/fixtures.md): the
# canonical run names what it wrote; a failing fixture's report gives the elements, the
# suspected class and the inputs, as `run` does; -q prints one line per failing fixture.
# cmake -DCLI=... -DFIXTURES=DIR -DWORK=... -P check_output.cmake
function(expect_in text what)
  string(FIND "${text}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected \"${what}\" in:\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CLI} fixtures generate --canonical --out ${WORK}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
file(GLOB written ${WORK}/*.json)
list(LENGTH written count)
if(NOT rc EQUAL 0 OR count EQUAL 0)
  message(FATAL_ERROR "fixtures generate --canonical exited ${rc}, wrote ${count} files")
endif()
expect_in("${out}" "wrote ${count} canonical fixtures to ${WORK}: worked-example, ")

set(one ${FIXTURES}/canonical/worked-example.json)
execute_process(COMMAND ${CLI} fixtures check --impl builtin:wrong-sign ${one}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "fixtures check of builtin:wrong-sign exited ${rc}, expected 1")
endif()
expect_in("${out}" "FAIL  ${one}\n      kernel[0]: got 1.5")
expect_in("${out}" "suspected: ")
expect_in("${out}" "wrong sign")
expect_in("${out}" "inputs: n=2 d=1 k=1 num_shards=1 step=0 lr=0.100000001")
expect_in("${out}" "x = [1 (0x1p+0), 2 (0x1p+1)]")

execute_process(COMMAND ${CLI} fixtures check -q --impl builtin:wrong-sign ${FIXTURES}/canonical
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
string(REGEX MATCHALL "FAIL  [^\n]*\n" lines "${out}")
string(REGEX MATCHALL "[^\n]*\n" all "${out}")
list(LENGTH lines failing)
if(NOT rc EQUAL 1 OR failing EQUAL 0)
  message(FATAL_ERROR "fixtures check -q exited ${rc} with ${failing} FAIL lines:\n${out}")
endif()
expect_in("${out}" "FAIL  ${one}: kernel[0]: got 1.5")
string(FIND "${out}" "inputs:" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "fixtures check -q printed the inputs:\n${out}")
endif()
foreach(line IN LISTS all)
  if(NOT line MATCHES "^(FAIL  |builtin:wrong-sign: |\n$)")
    message(FATAL_ERROR "fixtures check -q printed a line that is neither a failure nor the total: ${line}")
  endif()
endforeach()
