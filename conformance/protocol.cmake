# Protocol v1 client: runs an out-of-process adapter and talks JSON Lines to it.
# Included from conformance/CMakeLists.txt, so paths are relative to conformance/.
add_library(sgdc_protocol
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/base64.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/messages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/exit_status.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/child_process.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/adapter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/text.cpp)
add_library(sgdc::protocol ALIAS sgdc_protocol)
set_target_properties(sgdc_protocol PROPERTIES EXPORT_NAME protocol OUTPUT_NAME sgdc_protocol)
target_compile_features(sgdc_protocol PUBLIC cxx_std_20)
target_include_directories(sgdc_protocol PUBLIC
  $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/include>
  $<INSTALL_INTERFACE:include>)
target_link_libraries(sgdc_protocol
  PUBLIC sgdc::properties nlohmann_json::nlohmann_json fmt::fmt)
