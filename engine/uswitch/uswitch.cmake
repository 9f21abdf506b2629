# ctxbench's own user-level context switch: one assembly file per arch and
# ABI, chosen here by the target processor (cross builds set it in their
# toolchain file), plus context creation in C++. Probes see
# CTXBENCH_HAVE_USWITCH_ASM=1 when a switch exists for the target, 0 when not
# (then uswitch.asm lists as unsupported). Also builds the GoogleTest-free
# self-test of the switch, which cross builds run under qemu-user
# (run under qemu-user by tests/cross_smoke.sh, `make test-cross`). Included from engine/CMakeLists.txt.
set(uswitch_dir ${CMAKE_CURRENT_LIST_DIR})
set(uswitch_tests_dir ${CMAKE_CURRENT_LIST_DIR}/../tests/uswitch)
string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" uswitch_processor)
if(uswitch_processor MATCHES "^(x86_64|amd64)$")
  set(uswitch_arch x86_64)
  set(uswitch_asm ${uswitch_dir}/switch_x86_64_sysv.S)
elseif(uswitch_processor MATCHES "^(aarch64|arm64)$")
  set(uswitch_arch aarch64)
  set(uswitch_asm ${uswitch_dir}/switch_aarch64_aapcs64.S)
elseif(uswitch_processor MATCHES "^riscv64$")
  set(uswitch_arch riscv64)
  set(uswitch_asm ${uswitch_dir}/switch_riscv64_lp64d.S)
else()
  set(uswitch_arch "")
endif()

if(uswitch_arch)
  add_library(ctxbench_uswitch STATIC ${uswitch_dir}/uswitch.cpp ${uswitch_asm})
  target_include_directories(ctxbench_uswitch PUBLIC ${uswitch_dir})
  target_compile_definitions(ctxbench_uswitch PUBLIC CTXBENCH_HAVE_USWITCH_ASM=1)
  target_link_libraries(ctxbench_uswitch PRIVATE ctxbench_options)

  # The checks, shared by the GoogleTest suite (tests/unit/uswitch_asm_test.cpp)
  # and the self-test executable.
  add_library(ctxbench_uswitch_checks STATIC ${uswitch_tests_dir}/checks.cpp
                                             ${uswitch_tests_dir}/sentinels_${uswitch_arch}.S)
  target_include_directories(ctxbench_uswitch_checks PUBLIC ${uswitch_tests_dir})
  target_link_libraries(ctxbench_uswitch_checks PUBLIC ctxbench_uswitch PRIVATE ctxbench_options)
  add_executable(ctxbench-uswitch-selftest ${uswitch_tests_dir}/selftest_main.cpp)
  target_link_libraries(ctxbench-uswitch-selftest PRIVATE ctxbench_uswitch_checks ctxbench_options)
else()
  message(STATUS "uswitch: no assembly switch for '${CMAKE_SYSTEM_PROCESSOR}'; uswitch.asm will be unsupported")
  add_library(ctxbench_uswitch INTERFACE)
  target_compile_definitions(ctxbench_uswitch INTERFACE CTXBENCH_HAVE_USWITCH_ASM=0)
endif()
target_link_libraries(ctxbench_probes PUBLIC ctxbench_uswitch)
