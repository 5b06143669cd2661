// SPDX-License-Identifier: Apache-2.0
// C++ workload for the symbolizer tests: a template in a nested namespace and a class
// method, kept out of line, so their names must come out demangled
// ("symcpp::detail::Accumulator<int>::add"), with the mangled symbol as system_name.
#include <cstdio>
#include <cstdlib>

namespace symcpp {
namespace detail {

template <typename T> class Accumulator {
public:
	__attribute__((noinline)) T add(T x)
	{
		for (int i = 0; i < 1000; i++)
			total_ = total_ * 31 + x + i;
		return total_;
	}

private:
	T total_ = 0;
};

} // namespace detail

__attribute__((noinline)) long run_work(int n)
{
	detail::Accumulator<int> a;
	detail::Accumulator<long> b;
	long s = 0;

	for (int i = 0; i < n; i++)
		s += a.add(i) + b.add(i);
	return s;
}

} // namespace symcpp

int main(int argc, char **argv)
{
	std::printf("%ld\n", symcpp::run_work(argc > 1 ? std::atoi(argv[1]) : 1000));
	return 0;
}
