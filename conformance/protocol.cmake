# The protocol client: runs an out-of-process adapter and talks JSON Lines to it.
# Included from conformance/CMakeLists.txt, so paths are relative to conformance/.
# Its internals (child process, base64) live in src/protocol/ and are not installed.
sgdc_add_library(protocol INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/include SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/array_encoding.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/base64.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/messages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/recipe_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/precision_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/child_exit.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/child_process.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/adapter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/protocol/text.cpp)
target_include_directories(sgdc_protocol PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src)
target_link_libraries(sgdc_protocol
  PUBLIC sgdc::properties nlohmann_json::nlohmann_json fmt::fmt)
