# Cross-compile the engine for riscv64 Linux (Debian g++-riscv64-linux-gnu).
set(CMAKE_SYSTEM_PROCESSOR riscv64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-linux-gnu.cmake)
# std::atomic<bool>::exchange needs libatomic on riscv64 (no 1-byte AMO).
set(CMAKE_CXX_STANDARD_LIBRARIES "-latomic")
