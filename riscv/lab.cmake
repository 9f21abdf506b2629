# Builds the trap lab's images (riscv/Makefile) during the engine's CMake
# build and installs them into the wheel at ${CTXBENCH_RISCV_DATADIR}, as
# <platform>/lab.elf and lab.dis. Included from engine/CMakeLists.txt when
# that directory is set (pyproject.toml sets it). Without the cross compiler
# the wheel is built without the images and `ctxbench riscv` says so.
set(_lab ${CMAKE_CURRENT_LIST_DIR})
find_program(CTXBENCH_RISCV_CC riscv64-unknown-elf-gcc)
find_program(CTXBENCH_RISCV_OBJDUMP riscv64-unknown-elf-objdump)
find_program(CTXBENCH_MAKE NAMES make gmake)
if(CTXBENCH_RISCV_CC AND CTXBENCH_RISCV_OBJDUMP AND CTXBENCH_MAKE)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/riscv-lab)
  string(REGEX REPLACE "gcc$" "" _cross "${CTXBENCH_RISCV_CC}")
  file(GLOB _sources CONFIGURE_DEPENDS ${_lab}/kernel/* ${_lab}/user/* ${_lab}/include/*)
  set(_images)
  foreach(_platform spike qemu)
    list(APPEND _images ${_out}/${_platform}/lab.elf ${_out}/${_platform}/lab.dis)
  endforeach()
  add_custom_command(
    OUTPUT ${_images}
    COMMAND ${CTXBENCH_MAKE} -s -C ${_lab} OUT=${_out} CROSS=${_cross}
    DEPENDS ${_sources} ${_lab}/Makefile ${_lab}/link.ld
    COMMENT "Building the RISC-V trap lab images")
  add_custom_target(ctxbench-riscv-lab ALL DEPENDS ${_images})
  install(DIRECTORY ${_out}/ DESTINATION ${CTXBENCH_RISCV_DATADIR})
else()
  message(STATUS "riscv64-unknown-elf-gcc/objdump not found: "
                 "the package will not carry the RISC-V trap lab images")
endif()
