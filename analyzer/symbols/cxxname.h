/*
 * cxxname.h - C++ names as a reader wants them in text:
 * std::__cxx11::basic_string<char, std::char_traits<char>,
 * std::allocator<char> > is std::string, default template arguments
 * (allocators, char_traits, less, hash, equal_to, default_delete) go, and
 * so does the parameter list. JSON keeps the full names; the symbolizer
 * keeps the parameters where two overloads would meet (symbols.h,
 * frame_name).
 */
#ifndef MALLOCK_CXXNAME_H
#define MALLOCK_CXXNAME_H

#include <stdbool.h>
#include <stddef.h>

/* The short form of a demangled name into out (len bytes, truncated),
 * without its parameter list unless params (whose types are shortened
 * too). Returns out. Pure: no allocation, no state. A C name comes back as
 * is. */
char *cxx_short(const char *name, char *out, size_t len, bool params);

#endif
