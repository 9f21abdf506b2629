# Cross-compile the engine for aarch64 Linux (Debian g++-aarch64-linux-gnu).
set(CMAKE_SYSTEM_PROCESSOR aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux-gnu.cmake)
