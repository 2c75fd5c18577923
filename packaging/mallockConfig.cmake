# find_package(mallock CONFIG): the imported target mallock::mallock, the
# header mallock.h (the shim's API: weak symbols, nothing to link).
# Found relative to this file (PREFIX/share/cmake/mallock/).
get_filename_component(_mallock_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.."
  ABSOLUTE)
if(NOT TARGET mallock::mallock)
  add_library(mallock::mallock INTERFACE IMPORTED)
  set_target_properties(mallock::mallock PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_mallock_prefix}/include")
endif()
set(mallock_INCLUDE_DIRS "${_mallock_prefix}/include")
unset(_mallock_prefix)
