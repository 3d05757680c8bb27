# Regression fixtures: the file format, expectations derived by the oracle, generation,
# replay and captured counterexamples. Included from conformance/CMakeLists.txt.
# sgdc_fixtures sits below sgdc_conformance (whose `run --save-failures` writes
# fixtures) and above sgdc::properties and sgdc::protocol (base64 float arrays), so the
# dependencies still run reference <- properties <- conformance.
sgdc_add_library(fixtures INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/include SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/fixture.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/exact_value.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/derive.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/fixture_writer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/fixture_reader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/generate.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/canonical.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/replay.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/fixtures/counterexample.cpp)
# Provenance records the generator's version.
target_compile_definitions(sgdc_fixtures PRIVATE SGDC_VERSION="${PROJECT_VERSION}")
target_link_libraries(sgdc_fixtures
  PUBLIC sgdc::properties sgdc::protocol nlohmann_json::nlohmann_json
  PRIVATE fmt::fmt)

target_link_libraries(sgdc_conformance PRIVATE sgdc::fixtures)
target_link_libraries(sgd_conformance_cli PRIVATE sgdc::fixtures)
