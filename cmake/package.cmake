# The Debian package (`cpack -G DEB` in the build directory, or
# `cmake --build build --target package`): the library, headers, pkg-config
# file and CMake package, the admin CLI (and whatever else installs by
# default), plus the "deploy" component: the systemd units, the wrapper they
# start the job program with, the sysusers.d entry and /etc/cbatch/cbatch.env.
# The deploy component is left out of a plain `cmake --install` (it writes to
# /etc); `cmake --install build --component deploy` installs it on its own.
# docs/deploying.md says how the pieces fit.

# The units name the wrapper by its installed path; the package installs
# under /usr.
set(CB_DEPLOY_PREFIX /usr CACHE PATH "Prefix the Debian package installs under")
set(CB_DEPLOY_LIBEXECDIR ${CB_DEPLOY_PREFIX}/${CMAKE_INSTALL_LIBEXECDIR}/cbatch)
set(CB_DEPLOY_DOCDIR ${CB_DEPLOY_PREFIX}/share/doc/cbatch)
set(cb_units cbatch-worker@.service cbatch-scheduler.service cbatch-serve.service)
set(cb_unit_files)
foreach(u IN LISTS cb_units)
  configure_file(${PROJECT_SOURCE_DIR}/deploy/systemd/${u}.in
                 ${PROJECT_BINARY_DIR}/deploy/${u} @ONLY)
  list(APPEND cb_unit_files ${PROJECT_BINARY_DIR}/deploy/${u})
endforeach()
install(FILES ${cb_unit_files} DESTINATION lib/systemd/system
        COMPONENT deploy EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/systemd/cbatch.sysusers
        DESTINATION lib/sysusers.d RENAME cbatch.conf COMPONENT deploy EXCLUDE_FROM_ALL)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/deploy/cbatch-exec
        DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/cbatch COMPONENT deploy EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/cbatch.env DESTINATION /etc/cbatch
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ COMPONENT deploy EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/docs/deploying.md
              ${PROJECT_SOURCE_DIR}/deploy/prometheus/prometheus.yml
              ${PROJECT_SOURCE_DIR}/deploy/prometheus/cbatch-rules.yml
        DESTINATION share/doc/cbatch COMPONENT deploy EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME cbatch)
set(CPACK_PACKAGE_VENDOR "cbatch")
set(CPACK_PACKAGE_CONTACT "cbatch maintainers <cbatch@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Chunked batch-processing framework with a PostgreSQL job repository")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "Jobs written as reader, processor and writer callbacks (or one tasklet) get
launching, restart from the last committed chunk, DB locks with leases and
fencing, partitions claimed by workers on any host, cron schedules fired once
per cluster, a web console and Prometheus metrics. This package holds the
shared and static library, headers, pkg-config file and CMake package, the
admin CLI cbatch, and systemd units that run a job program's workers,
scheduler and console as the system user cbatch.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CB_DEPLOY_PREFIX})
# Stripped programs and shared library (install/strip: static archives keep
# their symbols).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# Every component in one package: what installs by default (Unspecified:
# library, headers, CLI, man pages, completion) and the deploy component.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
get_cmake_property(CPACK_COMPONENTS_ALL COMPONENTS)
# Run-time dependencies from the binaries (dpkg-shlibdeps); postinst's
# fallback for the system user; building against the headers needs the
# libpq and jansson headers (cbatch.pc's Requires) and xxHash's and
# libmicrohttpd's .pc files (its Requires.private).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "pkg-config, libpq-dev, libjansson-dev, libxxhash-dev, libmicrohttpd-dev")
# A shlibs file for libcbatch.so.0 (deploy/debian/triggers runs ldconfig).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/triggers)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
