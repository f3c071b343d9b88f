/* bench/calib_spread.py's workload: calls of a range of lengths, so that
 * the share of net figures a view marks uncertain ("<") says how tight the
 * runtime's calibration of its own cost is. spin(k) loops k times; each
 * length is called from its own function N times (default 200). Most
 * lengths are near the tracer's own cost (some 20 ns a call), where a net
 * figure's mark depends on the calibration's error. */
#include <stdlib.h>

static volatile unsigned long sink;

#define NOI __attribute__((noinline))
NOI void spin(long k) { for (long i = 0; i < k; i++) sink += i; }
NOI void len0(void) { __asm__ volatile(""); }
NOI void len5(void) { spin(5); }
NOI void len10(void) { spin(10); }
NOI void len20(void) { spin(20); }
NOI void len40(void) { spin(40); }
NOI void len100(void) { spin(100); }
NOI void len1000(void) { spin(1000); }

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	for (int i = 0; i < n; i++) {
		len0();
		len5();
		len10();
		len20();
		len40();
		len100();
		len1000();
	}
	return 0;
}
