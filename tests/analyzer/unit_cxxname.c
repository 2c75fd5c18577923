/*
 * unit_cxxname.c - the short C++ names of the text report (cxxname.h).
 */
#include "test.h"
#include "cxxname.h"

#include <stdio.h>
#include <string.h>

static void is(const char *in, const char *want)
{
	char b[512];
	cxx_short(in, b, sizeof b, false);
	if (!check_eq(b, want))
		fprintf(stderr, "  the name was %s\n", in);
}

int main(void)
{
	is("tree_insert", "tree_insert");
	is("Registry::Registry()", "Registry::Registry");
	is("Cache::put(std::__cxx11::basic_string<char, "
	   "std::char_traits<char>, "
	   "std::allocator<char> > const&, int) const",
	   "Cache::put");
	is("std::vector<std::__cxx11::basic_string<char, "
	   "std::char_traits<char>, "
	   "std::allocator<char> >, std::allocator<std::__cxx11::basic_string<"
	   "char, std::char_traits<char>, std::allocator<char> > > "
	   ">::push_back("
	   "std::__cxx11::basic_string<char, std::char_traits<char>, "
	   "std::allocator<char> > const&)",
	   "std::vector<std::string>::push_back");
	is("std::map<int, long, std::less<int>, std::allocator<std::pair<int "
	   "const, long> > >::operator[](int const&)",
	   "std::map<int, long>::operator[]");
	is("Worker::run()::{lambda(int)#1}::operator()(int) const",
	   "Worker::run()::{lambda(int)#1}::operator()");
	is("(anonymous namespace)::flush(Buf*)",
	   "(anonymous namespace)::flush");
	is("Pool::take(unsigned long) [clone .cold]", "Pool::take");
	is("Funct::operator()", "Funct::operator()");
	is("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int "
	   "const&>(__gnu_cxx::__normal_iterator<int*, std::vector<int, "
	   "std::allocator<int> > >, int const&)",
	   "std::vector<int>::_M_realloc_insert<int const&>");
	is("operator new(unsigned long)", "operator new");
	is("Foo::operator int() const", "Foo::operator int");
	/* Overloads keep their parameters, with short types. */
	char b[512];
	cxx_short(
	    "put(std::__cxx11::basic_string<char, std::char_traits<char>, "
	    "std::allocator<char> > const&, int)",
	    b, sizeof b, true);
	check_eq(b, "put(std::string const&, int)");
	char small[8];
	cxx_short("Registry::Registry()", small, sizeof small, false);
	check(strlen(small) < sizeof small);
	return test_done();
}
