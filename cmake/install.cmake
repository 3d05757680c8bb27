# Install rules and the exported CMake package: find_package(sgd_conformance).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(sgdc_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/sgd_conformance)
set(SGDC_INSTALL_PYTHONDIR ${CMAKE_INSTALL_DATADIR}/sgd_conformance/python)

set(sgdc_install_targets)
foreach(target sgdc_reference sgdc_properties sgdc_builtins sgdc_protocol sgdc_regression
               sgdc_conformance sgdc_run_main sgd_conformance_cli)
  if(TARGET ${target})
    list(APPEND sgdc_install_targets ${target})
  endif()
endforeach()
install(TARGETS ${sgdc_install_targets} EXPORT sgd_conformance_targets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY reference/include/ properties/include/ conformance/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY conformance/python/ DESTINATION ${SGDC_INSTALL_PYTHONDIR}
        USE_SOURCE_PERMISSIONS PATTERN __pycache__ EXCLUDE PATTERN tests EXCLUDE
        PATTERN build EXCLUDE PATTERN *.egg-info EXCLUDE PATTERN .pytest_cache EXCLUDE
        PATTERN .mypy_cache EXCLUDE)
install(EXPORT sgd_conformance_targets NAMESPACE sgdc:: FILE sgd_conformanceTargets.cmake
        DESTINATION ${sgdc_package_dir})

configure_package_config_file(cmake/sgd_conformanceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sgd_conformanceConfig.cmake
  INSTALL_DESTINATION ${sgdc_package_dir}
  PATH_VARS SGDC_INSTALL_PYTHONDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sgd_conformanceConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sgd_conformanceConfig.cmake
              ${PROJECT_BINARY_DIR}/sgd_conformanceConfigVersion.cmake
              cmake/SgdConformance.cmake
        DESTINATION ${sgdc_package_dir})
