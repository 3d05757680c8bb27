# Sharding: per-shard storage of a fully sharded step (the `storage` subcommand).
# Included from conformance/CMakeLists.txt, so paths are relative to conformance/.
sgdc_add_library(sharding INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/include
                 SOURCES ${CMAKE_CURRENT_LIST_DIR}/src/storage.cpp)
target_link_libraries(sgdc_sharding PUBLIC sgdc::properties PRIVATE fmt::fmt)
target_link_libraries(sgd_conformance_cli PRIVATE sgdc::sharding)
