# Regression fixtures: the file format, expectations derived by the oracle, generation,
# replay and captured counterexamples. Included from conformance/CMakeLists.txt.
# sgdc_regression sits below sgdc_conformance (whose `run --save-failures` writes
# fixtures) and above sgdc::properties and sgdc::protocol (base64 float arrays), so the
# dependencies still run reference <- properties <- conformance.
sgdc_add_library(regression INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/include SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/fixture.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/exact_value.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/derive.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/fixture_writer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/fixture_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/generate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/canonical.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/replay.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/regression/counterexample.cpp)
target_include_directories(sgdc_regression PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src)
# Provenance records the generator's version.
target_compile_definitions(sgdc_regression PRIVATE SGDC_VERSION="${PROJECT_VERSION}")
target_link_libraries(sgdc_regression
  PUBLIC sgdc::properties sgdc::protocol nlohmann_json::nlohmann_json
  PRIVATE fmt::fmt)
