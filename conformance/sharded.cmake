# Sharding: per-shard storage of a fully sharded step (the `storage` subcommand).
# Included from conformance/CMakeLists.txt, so paths are relative to conformance/.
add_library(sgdc_sharding ${CMAKE_CURRENT_LIST_DIR}/src/storage.cpp)
add_library(sgdc::sharding ALIAS sgdc_sharding)
set_target_properties(sgdc_sharding PROPERTIES EXPORT_NAME sharding)
target_compile_features(sgdc_sharding PUBLIC cxx_std_20)
target_include_directories(sgdc_sharding PUBLIC
  $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/include>
  $<INSTALL_INTERFACE:include>)
target_link_libraries(sgdc_sharding PUBLIC sgdc::properties PRIVATE fmt::fmt)
target_link_libraries(sgd_conformance_cli PRIVATE sgdc::sharding)
