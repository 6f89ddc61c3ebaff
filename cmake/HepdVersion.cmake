# Writes core/version.hpp with the commit the sources are at. Run as a script (cmake -P) by the
# hepd_version target at every build, and included once at configure time so that the header
# exists from the start. configure_file leaves the file (and its time stamp) alone when the text
# is unchanged: only a new commit recompiles what includes it.
#
# Variables: HEPD_SOURCE_DIR, HEPD_VERSION_TEMPLATE, HEPD_VERSION_OUTPUT, PROJECT_VERSION, and
# HEPD_GIT_COMMIT_FALLBACK (the commit to report when the sources are no git checkout, e.g. a
# tarball: the configured HEPD_GIT_COMMIT, else "unknown").

set(HEPD_GIT_COMMIT "")
find_program(HEPD_GIT git)
if(HEPD_GIT)
  # Only the sources' own repository: a tarball unpacked inside another checkout (a packaging
  # repository) must not report that one's commit.
  execute_process(COMMAND ${HEPD_GIT} rev-parse --show-toplevel
    WORKING_DIRECTORY ${HEPD_SOURCE_DIR}
    OUTPUT_VARIABLE hepd_git_top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE hepd_git_rc)
  if(hepd_git_rc EQUAL 0)
    file(REAL_PATH "${hepd_git_top}" hepd_git_top)
    file(REAL_PATH "${HEPD_SOURCE_DIR}" hepd_source_real)
    if(hepd_git_top STREQUAL hepd_source_real)
      execute_process(COMMAND ${HEPD_GIT} rev-parse --short=12 HEAD
        WORKING_DIRECTORY ${HEPD_SOURCE_DIR}
        OUTPUT_VARIABLE HEPD_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
  endif()
endif()
if(NOT HEPD_GIT_COMMIT)
  set(HEPD_GIT_COMMIT "${HEPD_GIT_COMMIT_FALLBACK}")
endif()
if(NOT HEPD_GIT_COMMIT)
  set(HEPD_GIT_COMMIT "unknown")
endif()
configure_file(${HEPD_VERSION_TEMPLATE} ${HEPD_VERSION_OUTPUT} @ONLY)
