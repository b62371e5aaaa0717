# Man pages: starlingd(1), starling-sim(1) and starling-probe(1) from each binary's --help
# (through help2man; starling-probe's commands each in its own subsection), libstarling(3) from
# capi/starling.h's comments. scripts/gen_reference.py --man writes them into build/man;
# `cmake --install` puts them in share/man/man1 and man3. Without help2man or a Python 3
# interpreter they are skipped with a message (scripts/install-deps.sh installs help2man).
include(GNUInstallDirs)
find_program(STARLING_HELP2MAN help2man)
find_package(Python3 COMPONENTS Interpreter)
if(NOT STARLING_HELP2MAN OR NOT Python3_Interpreter_FOUND)
  message(STATUS "Starling man pages: skipped (they need help2man and python3; "
                 "scripts/install-deps.sh installs them)")
  return()
endif()

set(STARLING_MAN_DIR ${PROJECT_BINARY_DIR}/man)
set(STARLING_MAN1 ${STARLING_MAN_DIR}/starlingd.1 ${STARLING_MAN_DIR}/starling-sim.1
    ${STARLING_MAN_DIR}/starling-probe.1)
set(STARLING_MAN3 ${STARLING_MAN_DIR}/libstarling.3)
add_custom_command(
  OUTPUT ${STARLING_MAN1} ${STARLING_MAN3}
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen_reference.py
          --build ${PROJECT_BINARY_DIR} --man ${STARLING_MAN_DIR} --version ${PROJECT_VERSION}
  DEPENDS starlingd starling-sim starling-probe ${PROJECT_SOURCE_DIR}/scripts/gen_reference.py
          ${PROJECT_SOURCE_DIR}/capi/starling.h
  COMMENT "Man pages from --help (help2man) and capi/starling.h"
  VERBATIM)
add_custom_target(man ALL DEPENDS ${STARLING_MAN1} ${STARLING_MAN3})
install(FILES ${STARLING_MAN1} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${STARLING_MAN3} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
