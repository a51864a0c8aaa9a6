# install_pc.cmake — the pkg-config files, written at install time for the
# prefix really installed to (make install PREFIX=..., cmake --install
# --prefix ..., or the configured CMAKE_INSTALL_PREFIX), run by install(CODE)
# from the top-level CMakeLists.txt with RALLY_PC_SRC (the source tree),
# RALLY_PC_BIN (the build tree), RALLY_PC_LIBDIR, RALLY_PC_INCLUDEDIR
# (GNUInstallDirs' relative dirs), RALLY_PC_VERSION, RALLY_PC_MPI_LIBS,
# RALLY_PC_REQUIRES (the pkg-config modules librally needs) and
# RALLY_PC_NAMES (rally rally_mock rabit rabit_mock [rally_mpi rabit_mpi]);
# and rabit's library names as links to rally's.
#
# Paths are absolute and normalised (no "..", no "//").  A prefix outside
# the system's library path gets -Wl,-rpath,LIBDIR in Libs, so a program
# built with `cc prog.c $(pkg-config --cflags --libs rally)` runs without
# LD_LIBRARY_PATH; the system prefixes /usr and /usr/local get none (their
# library directories are the dynamic loader's own), and ldconfig runs when
# installing there as root without DESTDIR.
set(prefix "${CMAKE_INSTALL_PREFIX}")
cmake_path(ABSOLUTE_PATH prefix NORMALIZE)
string(REGEX REPLACE "(.)/$" "\\1" prefix "${prefix}")
set(libdir "${prefix}/${RALLY_PC_LIBDIR}")
set(includedir "${prefix}/${RALLY_PC_INCLUDEDIR}")
cmake_path(NORMAL_PATH libdir)
cmake_path(NORMAL_PATH includedir)
if(prefix STREQUAL "/usr" OR prefix STREQUAL "/usr/local")
  set(system_prefix 1)
  set(RALLY_PC_RPATH "")
else()
  set(system_prefix 0)
  set(RALLY_PC_RPATH " -Wl,-rpath,\${libdir}")
endif()
set(PROJECT_VERSION "${RALLY_PC_VERSION}")
set(RALLY_MPI_LIBS "${RALLY_PC_MPI_LIBS}")
foreach(name ${RALLY_PC_NAMES})
  configure_file("${RALLY_PC_SRC}/${name}.pc.in" "${RALLY_PC_BIN}/install/${name}.pc" @ONLY)
  file(INSTALL "${RALLY_PC_BIN}/install/${name}.pc"
       DESTINATION "${CMAKE_INSTALL_PREFIX}/${RALLY_PC_LIBDIR}/pkgconfig")
  # rabit's library names (-lrabit, -lrabit_mock, -lrabit_mpi) are links to
  # rally's: librabit.so -> librally.so, librabit.a -> librally.a
  if(name MATCHES "^rabit")
    string(REPLACE "rabit" "rally" target "${name}")
    foreach(ext so a)
      file(CREATE_LINK "lib${target}.${ext}"
           "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${RALLY_PC_LIBDIR}/lib${name}.${ext}" SYMBOLIC)
      message(STATUS "Installing: lib${name}.${ext} -> lib${target}.${ext}")
    endforeach()
  endif()
endforeach()
if(system_prefix AND "$ENV{DESTDIR}" STREQUAL "")
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  find_program(RALLY_LDCONFIG ldconfig PATHS /sbin /usr/sbin)
  if(uid STREQUAL "0" AND RALLY_LDCONFIG)
    message(STATUS "Running ldconfig (a system prefix: ${prefix})")
    execute_process(COMMAND ${RALLY_LDCONFIG})
  else()
    message(STATUS "Installed into ${prefix}: run ldconfig as root so that programs find librally")
  endif()
endif()
