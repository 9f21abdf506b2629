# Cross-compile the engine for x86_64 Linux (Debian g++-x86-64-linux-gnu), for
# `make engines` on a machine of another arch.
set(CMAKE_SYSTEM_PROCESSOR x86_64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux-gnu.cmake)
