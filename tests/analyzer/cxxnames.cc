// cxxnames - C++ names for the text report: two put()
// overloads (std::string, int) allocate under one mutex, and
// Registry::add(std::string const&), not overloaded, does too. The text
// must show Registry::add and the overloads with short parameter types;
// JSON the demangled names in full.
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

static std::mutex mu;
static std::map<std::string, std::vector<std::string>> idx;

__attribute__((noinline)) void put(const std::string &k, const std::string &v)
{
	std::lock_guard<std::mutex> g(mu);
	idx[k].push_back(v);
}

__attribute__((noinline)) void put(const std::string &k, int v)
{
	std::lock_guard<std::mutex> g(mu);
	idx[k].push_back(std::to_string(v) + "-a-value-past-the-small-buffer");
}

struct Registry {
	std::vector<std::string> names;
	__attribute__((noinline)) void add(const std::string &n)
	{
		std::lock_guard<std::mutex> g(mu);
		names.push_back(n);
		if (names.size() > 64)
			names.clear();
	}
};

int main()
{
	Registry reg;
	std::vector<std::thread> t;
	for (int i = 0; i < 4; i++)
		t.emplace_back([i, &reg] {
			for (int j = 0; j < 5000; j++) {
				put("key" + std::to_string(j % 50), j);
				put("k" + std::to_string(j % 50),
				    std::string(40, 'a'));
				reg.add(std::string(48, char('a' + i)));
				if (j % 100 == 0) {
					std::lock_guard<std::mutex> g(mu);
					idx.clear();
				}
			}
		});
	for (auto &x : t)
		x.join();
	return 0;
}
