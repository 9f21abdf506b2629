# Shared by the per-arch toolchain files: cross-compile the engine for
# ${CMAKE_SYSTEM_PROCESSOR} Linux with Debian's g++-<arch>-linux-gnu, linked
# statically so qemu-user runs it without a sysroot.
set(CMAKE_SYSTEM_NAME Linux)
set(triple ${CMAKE_SYSTEM_PROCESSOR}-linux-gnu)
set(CMAKE_C_COMPILER ${triple}-gcc)
set(CMAKE_CXX_COMPILER ${triple}-g++)
set(CMAKE_ASM_COMPILER ${triple}-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/${triple})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# Header-only libraries come from the host; compiled ones must be for the target.
set(CTXBENCH_WITH_BOOST OFF CACHE BOOL "" FORCE)
set(CTXBENCH_STATIC ON CACHE BOOL "" FORCE)
