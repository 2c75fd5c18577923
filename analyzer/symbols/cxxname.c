/*
 * cxxname.c - short C++ names for text (see cxxname.h). Works on the
 * demangler's output, in place in the caller's buffer: each step only
 * removes or shortens, so the result never outgrows the input.
 */
#include "cxxname.h"

#include <string.h>

/* Replaces every occurrence of from in s by to (strlen(to) <= strlen(from)). */
static void replace_all(char *s, const char *from, const char *to)
{
	size_t nf = strlen(from), nt = strlen(to);
	char *p = s;
	while ((p = strstr(p, from)) != NULL) {
		memmove(p + nt, p + nf, strlen(p + nf) + 1);
		memcpy(p, to, nt);
		p += nt;
	}
}

/* The index just past the '>' closing the '<' at s[i], or 0. */
static size_t close_angle(const char *s, size_t i)
{
	int d = 0;
	for (; s[i]; i++) {
		if (s[i] == '<')
			d++;
		else if (s[i] == '>' && --d == 0)
			return i + 1;
	}
	return 0;
}

/* Removes ", std::X<...>" default template arguments. */
static void drop_defaults(char *s)
{
	static const char *const dflt[] = {", std::allocator<",
	                                   ", std::char_traits<",
	                                   ", std::less<",
	                                   ", std::equal_to<",
	                                   ", std::hash<",
	                                   ", std::default_delete<",
	                                   NULL};
	for (int k = 0; dflt[k]; k++) {
		char *p = s;
		while ((p = strstr(p, dflt[k])) != NULL) {
			size_t open = strlen(dflt[k]) - 1;
			size_t end = close_angle(p, open);
			if (!end)
				break;
			memmove(p, p + end, strlen(p + end) + 1);
		}
	}
}

/* Cuts the parameter list (and what follows it: const, &, [clone ...]). */
static void drop_params(char *s)
{
	char *clone = strstr(s, " [clone ");
	if (clone)
		*clone = 0;
	size_t n = strlen(s);
	/* trailing qualifiers after the closing parenthesis */
	for (;;) {
		static const char *const q[] = {" const", " volatile", " &&",
		                                " &",     " noexcept", NULL};
		bool cut = false;
		for (int k = 0; q[k]; k++) {
			size_t m = strlen(q[k]);
			if (n > m && strcmp(s + n - m, q[k]) == 0) {
				n -= m;
				s[n] = 0;
				cut = true;
			}
		}
		if (!cut)
			break;
	}
	if (n == 0 || s[n - 1] != ')')
		return;
	int d = 0;
	for (size_t i = n; i-- > 0;) {
		if (s[i] == ')')
			d++;
		else if (s[i] == '(' && --d == 0) {
			/* "operator()" names a function, not parameters */
			if (i >= 8 && strncmp(s + i - 8, "operator", 8) == 0)
				return;
			if (i == 0)
				return;
			s[i] = 0;
			return;
		}
	}
}

/* Drops a function template's return type ("void std::f<int>(int)"): the
 * text before the last space outside brackets and before the parameters,
 * unless that space follows "operator" (operator new, operator int). */
static void drop_return_type(char *s)
{
	int d = 0;
	size_t cut = 0;
	for (size_t i = 0; s[i]; i++) {
		char c = s[i];
		if (c == '(' && d == 0)
			break;
		if (c == '<' || c == '(' || c == '{' || c == '[')
			d++;
		else if (c == '>' || c == ')' || c == '}' || c == ']')
			d--;
		else if (c == ' ' && d == 0 &&
		         !(i >= 8 && strncmp(s + i - 8, "operator", 8) == 0))
			cut = i + 1;
	}
	if (cut)
		memmove(s, s + cut, strlen(s + cut) + 1);
}

char *cxx_short(const char *name, char *out, size_t len, bool params)
{
	if (!len)
		return out;
	size_t n = strlen(name);
	if (n >= len)
		n = len - 1;
	memcpy(out, name, n);
	out[n] = 0;
	if (!strchr(out, ':') && !strchr(out, '('))
		return out; /* a C name */
	replace_all(out, "std::__cxx11::", "std::");
	replace_all(out, "std::__1::", "std::");
	drop_defaults(out);
	replace_all(out, " >", ">");
	drop_return_type(out);
	replace_all(out, "std::basic_string<char>", "std::string");
	replace_all(out, "std::basic_string_view<char>", "std::string_view");
	if (!params)
		drop_params(out);
	return out;
}
