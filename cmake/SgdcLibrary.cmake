# sgdc_add_library(<name> INCLUDE_DIR <dir> SOURCES <file>...)
#
# One of the project's libraries: target sgdc_<name> (archive libsgdc_<name>.a), its
# namespaced alias sgdc::<name> (also the name it is exported under), C++20, and <dir>
# as its public include directory in the build tree (include/ once installed).
function(sgdc_add_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "INCLUDE_DIR" "SOURCES")
  add_library(sgdc_${name} ${arg_SOURCES})
  add_library(sgdc::${name} ALIAS sgdc_${name})
  set_target_properties(sgdc_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME sgdc_${name})
  target_compile_features(sgdc_${name} PUBLIC cxx_std_20)
  target_include_directories(sgdc_${name} PUBLIC
    $<BUILD_INTERFACE:${arg_INCLUDE_DIR}>
    $<INSTALL_INTERFACE:include>)
endfunction()
