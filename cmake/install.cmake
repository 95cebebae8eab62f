# cmake --install and cpack: what a user of patchfuzz gets outside our tree.
#
#   bin/patchfuzz                                   the CLI
#   include/patchfuzz/patcher.h                     the external-patcher C ABI (the plugin SDK)
#   lib/cmake/patchfuzz/                            find_package(patchfuzz): patchfuzz::plugin
#   lib/pkgconfig/patchfuzz-plugin.pc               the same for a bare compiler line
#   share/patchfuzz/examples/batched-plugin/        the example plugin, as a template
#   include/patchfuzz/reference/, lib/patchfuzz/    what the example itself needs: patchfuzz's own
#                                                   batched patcher (patchfuzz::reference_patcher,
#                                                   patchfuzz-reference-patcher.pc)
#
# A developer's own patcher needs only patchfuzz::plugin (one header); the reference patcher is
# there so that the template builds and runs as shipped before its apply() is replaced.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS patchfuzz RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# patchfuzz::plugin: the ABI header, nothing to link (the plugin is loaded with dlopen).
add_library(patchfuzz_plugin INTERFACE)
target_include_directories(patchfuzz_plugin INTERFACE $<BUILD_INTERFACE:${PATCHFUZZ_SOURCE_ROOT}/include>
                                                      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(patchfuzz_plugin PROPERTIES EXPORT_NAME plugin)
install(FILES ${PATCHFUZZ_SOURCE_ROOT}/include/patchfuzz/patcher.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/patchfuzz)

# patchfuzz::reference_patcher: our batched patcher and the pf_* <-> Program conversion, as static
# archives, with the few headers the example includes (found by `g++ -MM` of the example).
add_library(patchfuzz_plugin_convert STATIC ${PATCHFUZZ_SOURCE_ROOT}/harness/plugin/pf_convert.cpp)
target_link_libraries(patchfuzz_plugin_convert PUBLIC patchfuzz_patch patchfuzz_plugin)
add_library(patchfuzz_reference_patcher INTERFACE)
target_link_libraries(patchfuzz_reference_patcher INTERFACE patchfuzz_plugin_convert)
target_include_directories(patchfuzz_reference_patcher INTERFACE
                           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/patchfuzz/reference>)
set_target_properties(patchfuzz_reference_patcher PROPERTIES EXPORT_NAME reference_patcher)
set(PATCHFUZZ_REFERENCE_ARCHIVES patchfuzz_plugin_convert patchfuzz_patch patchfuzz_isa patchfuzz_util)
foreach(h bpf/isa/insn.hpp bpf/isa/encoding.hpp bpf/isa/insn_facts.hpp bpf/program/program.hpp bpf/patch/patch.hpp harness/plugin/pf_convert.hpp)
  get_filename_component(d ${h} DIRECTORY)
  install(FILES ${PATCHFUZZ_SOURCE_ROOT}/${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/patchfuzz/reference/${d})
endforeach()

install(TARGETS patchfuzz_plugin patchfuzz_reference_patcher ${PATCHFUZZ_REFERENCE_ARCHIVES}
        EXPORT patchfuzzTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}/patchfuzz)
set(PATCHFUZZ_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/patchfuzz)
install(EXPORT patchfuzzTargets NAMESPACE patchfuzz:: DESTINATION ${PATCHFUZZ_CMAKE_DIR})
configure_package_config_file(${PATCHFUZZ_SOURCE_ROOT}/cmake/patchfuzzConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/cmake/patchfuzzConfig.cmake INSTALL_DESTINATION ${PATCHFUZZ_CMAKE_DIR}
                              PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/patchfuzzConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/patchfuzzConfig.cmake ${CMAKE_BINARY_DIR}/cmake/patchfuzzConfigVersion.cmake
        DESTINATION ${PATCHFUZZ_CMAKE_DIR})

# pkg-config: the header for one's own plugin; the reference patcher for the example.
set(PATCHFUZZ_REFERENCE_LIBS "")
foreach(a ${PATCHFUZZ_REFERENCE_ARCHIVES})
  string(APPEND PATCHFUZZ_REFERENCE_LIBS " -l${a}")
endforeach()
# Relocatable: the prefix is found from the .pc file's own place (cmake --install --prefix P).
file(RELATIVE_PATH PATCHFUZZ_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
foreach(pc patchfuzz-plugin patchfuzz-reference-patcher)
  configure_file(${PATCHFUZZ_SOURCE_ROOT}/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

install(FILES ${PATCHFUZZ_SOURCE_ROOT}/harness/plugin/example/example_batched_plugin.cpp
              ${PATCHFUZZ_SOURCE_ROOT}/harness/plugin/example/CMakeLists.txt
        DESTINATION ${CMAKE_INSTALL_DATADIR}/patchfuzz/examples/batched-plugin)

# cpack -G DEB: Depends from the libraries the CLI links (dpkg-shlibdeps: libbpf1, libz3-4,
# libtcmalloc-minimal4, libstdc++6, libc6), and libelf1, which libbpf opens .bpf.o files with.
set(CPACK_PACKAGE_NAME patchfuzz)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "patchfuzz maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "differential fuzzer for the Linux BPF verifier's instruction rewriting")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libelf1")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "qemu-system-x86")
set(CPACK_GENERATOR DEB)
include(CPack)
