# Run by cpack (CPACK_PRE_BUILD_SCRIPTS) on the staged tree before it is packed: adds
# /usr/share/doc/starling/copyright and changelog.gz, as Debian's policy wants of every package,
# compresses the manual pages that the install put in /usr/share/man (gzip -9n, as the policy
# wants them), and adds lintian's overrides (cmake/deb/lintian-overrides: each says why).
# The changelog's date and the copyright's year are $SOURCE_DATE_EPOCH's (scripts/package.sh sets it to the last commit's),
# so that the same tree packs to the same file.
set(root "${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
if(NOT IS_DIRECTORY "${root}/usr")
  # CPACK_SET_DESTDIR: the staged tree is CPACK_TEMPORARY_DIRECTORY.
  set(root "${CPACK_TEMPORARY_DIRECTORY}")
endif()
set(doc "${root}/usr/share/doc/starling")
file(MAKE_DIRECTORY "${doc}")
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
string(TIMESTAMP year "%Y" UTC)
configure_file("${CPACK_STARLING_DEB_DIR}/copyright.in" "${doc}/copyright" @ONLY)
file(CHMOD "${doc}/copyright" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
configure_file("${CPACK_STARLING_DEB_DIR}/changelog.in" "${doc}/changelog" @ONLY)
file(MAKE_DIRECTORY "${root}/usr/share/lintian/overrides")
configure_file("${CPACK_STARLING_DEB_DIR}/lintian-overrides"
               "${root}/usr/share/lintian/overrides/starling" COPYONLY)
file(CHMOD "${root}/usr/share/lintian/overrides/starling"
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(GLOB man_pages "${root}/usr/share/man/man*/*")
list(FILTER man_pages EXCLUDE REGEX "\\.gz$")
foreach(file "${doc}/changelog" ${man_pages})
  execute_process(COMMAND gzip -9nf "${file}" RESULT_VARIABLE gzip_result)
  if(NOT gzip_result EQUAL 0)
    message(FATAL_ERROR "gzip -9nf ${file} failed (${gzip_result})")
  endif()
  file(CHMOD "${file}.gz" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endforeach()
