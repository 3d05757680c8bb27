# The command line. Included from conformance/CMakeLists.txt, so paths are relative to
# conformance/. CLI11 is linked privately: no public header of the project includes it.

# run's options and a complete main for an in-process implementation (sgdc/conformance/run_main.hpp).
sgdc_add_library(run_main INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/include SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/src/cli/run_options.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/cli/run_main.cpp)
target_link_libraries(sgdc_run_main PUBLIC sgdc::conformance PRIVATE CLI11::CLI11 fmt::fmt)

# sgd-conformance: one file per subcommand.
file(GLOB sgdc_subcommand_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/src/cli/*_subcommand.cpp)
add_executable(sgd_conformance_cli ${CMAKE_CURRENT_LIST_DIR}/src/cli/main.cpp ${sgdc_subcommand_sources})
add_executable(sgdc::cli ALIAS sgd_conformance_cli)
set_target_properties(sgd_conformance_cli PROPERTIES OUTPUT_NAME sgd-conformance EXPORT_NAME cli)
target_compile_definitions(sgd_conformance_cli PRIVATE SGDC_VERSION="${PROJECT_VERSION}")
target_link_libraries(sgd_conformance_cli PRIVATE sgdc::run_main sgdc::regression CLI11::CLI11 fmt::fmt)
