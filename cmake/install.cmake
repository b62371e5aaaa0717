# What `cmake --install build [--prefix P]` puts on a host, beside the targets' own rules
# (starlingd, starling-sim, starling-probe in node/; libstarling and its header in capi/):
#   bin/        the launchers as commands: starling-launch, starling-launch-mpi,
#               starling-launch-ssh, starling-report (links into share/starling/)
#   share/starling/   the launchers' scripts, the helpers they run (plots, progress line,
#               workers), the Slurm batch template, starling-probe infer's plot script
#   lib/pkgconfig/starling.pc   for `pkg-config --cflags --libs starling`
#   lib/python3/dist-packages/starling   the Python package (STARLING_INSTALL_PYTHONDIR)
# Nothing installed refers to the source or the build tree: a launcher finds its helpers beside
# its own real path and the binaries beside the command or on PATH, and the Python package finds
# libstarling through a path relative to its own folder, so the prefix given at install time
# (--prefix, or the Debian package's /usr) is the only one that counts.
set(STARLING_INSTALL_PYTHONDIR "lib/python3/dist-packages" CACHE STRING
    "Folder of the Python package 'starling', relative to the install prefix (Debian's python3 \
reads /usr/lib/python3/dist-packages; with another prefix, put PREFIX/THIS on PYTHONPATH)")
set(STARLING_INSTALL_SHAREDIR "${CMAKE_INSTALL_DATADIR}/starling")
foreach(dir CMAKE_INSTALL_BINDIR CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_INCLUDEDIR
            CMAKE_INSTALL_DATADIR STARLING_INSTALL_PYTHONDIR)
  if(IS_ABSOLUTE "${${dir}}")
    message(FATAL_ERROR "${dir}=${${dir}}: give it relative to the install prefix (the launchers "
                        "and the Python package find their files by relative paths)")
  endif()
endforeach()

# The launchers and the scripts they run, together in share/starling/ (launch_local.py imports
# daemon_warnings, launch_progress and launch_workers from its own folder and runs plot_run.py and run_report.py
# from there).
set(examples ${PROJECT_SOURCE_DIR}/examples)
install(PROGRAMS ${examples}/launch_local.py ${examples}/launch_mpi.sh ${examples}/launch_ssh.sh
                 ${examples}/run_report.py ${examples}/plot_run.py ${examples}/plot_inference.py
                 ${examples}/starling.sbatch
        DESTINATION ${STARLING_INSTALL_SHAREDIR})
install(FILES ${examples}/daemon_warnings.py ${examples}/launch_progress.py ${examples}/launch_workers.py
        DESTINATION ${STARLING_INSTALL_SHAREDIR})

# The commands: relative symbolic links bin/NAME -> ../share/starling/SCRIPT, made here and
# installed as links, so that they hold under any prefix.
set(links_dir ${PROJECT_BINARY_DIR}/install-links)
file(MAKE_DIRECTORY ${links_dir})
set(launcher_links starling-launch:launch_local.py starling-launch-mpi:launch_mpi.sh
                   starling-launch-ssh:launch_ssh.sh starling-report:run_report.py)
file(RELATIVE_PATH bin_to_share /prefix/${CMAKE_INSTALL_BINDIR} /prefix/${STARLING_INSTALL_SHAREDIR})
foreach(entry ${launcher_links})
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 command)
  list(GET entry 1 script)
  file(CREATE_LINK ${bin_to_share}/${script} ${links_dir}/${command} SYMBOLIC)
  install(FILES ${links_dir}/${command} DESTINATION ${CMAKE_INSTALL_BINDIR})
endforeach()

# The Python package, and _installed.py: libstarling's path relative to the package's folder
# (both move together with the prefix).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/starling/
        DESTINATION ${STARLING_INSTALL_PYTHONDIR}/starling
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
file(RELATIVE_PATH python_to_lib /prefix/${STARLING_INSTALL_PYTHONDIR}/starling
     /prefix/${CMAKE_INSTALL_LIBDIR}/libstarling.so.${STARLING_ABI_VERSION})
file(WRITE ${PROJECT_BINARY_DIR}/python/_installed.py
     "\"\"\"Where the installed libstarling is (written by cmake --install).\"\"\"\n"
     "LIBRARY = \"${python_to_lib}\"  # relative to this folder\n")
install(FILES ${PROJECT_BINARY_DIR}/python/_installed.py
        DESTINATION ${STARLING_INSTALL_PYTHONDIR}/starling)

# starling.pc, written at install time with the prefix of that install.
install(CODE "
  set(pc_prefix \"\${CMAKE_INSTALL_PREFIX}\")
  set(pc_libdir \"${CMAKE_INSTALL_LIBDIR}\")
  set(pc_includedir \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(pc_version \"${PROJECT_VERSION}\")
  configure_file(\"${CMAKE_CURRENT_LIST_DIR}/starling.pc.in\" \"${PROJECT_BINARY_DIR}/starling.pc\"
                 @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/starling.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
