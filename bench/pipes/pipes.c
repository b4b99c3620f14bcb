// pipes measures how the vector instructions of the packed AVX-512
// kernels' inner step share the cores' execution pipes (issue 26: why Q4_0
// and Q8_0 prefill tie at AVX-512): loops of 16 independent vpdpbusd
// chains, alone and with FMAs, multiplies and conversions of their own
// registers beside them, in cycles per iteration (the clock taken from a
// chain of dependent integer adds, one a cycle).
//
//	gcc -O2 -mavx512f -mavx512vnni -o /tmp/pipes bench/pipes/pipes.c && chrt -f 10 /tmp/pipes
#include <stdio.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

#define DP(i) "vpdpbusd %%zmm31, %%zmm30, %%zmm" #i "\n\t"
#define FM(i) "vfmadd213ps %%zmm29, %%zmm28, %%zmm" #i "\n\t"
#define MU(i) "vmulps %%zmm29, %%zmm28, %%zmm" #i "\n\t"
#define CV(i, j) "vcvtdq2ps %%zmm" #j ", %%zmm" #i "\n\t"
#define D16 DP(0) DP(1) DP(2) DP(3) DP(4) DP(5) DP(6) DP(7) DP(8) DP(9) DP(10) DP(11) DP(12) DP(13) DP(14) DP(15)
#define ZERO(i) "vpxord %%zmm" #i ", %%zmm" #i ", %%zmm" #i "\n\t"
#define ZEROS                                                                                                     \
	ZERO(0) ZERO(1) ZERO(2) ZERO(3) ZERO(4) ZERO(5) ZERO(6) ZERO(7) ZERO(8) ZERO(9) ZERO(10) ZERO(11) ZERO(12) \
	ZERO(13) ZERO(14) ZERO(15) ZERO(16) ZERO(17) ZERO(18) ZERO(19) ZERO(24) ZERO(25) ZERO(26) ZERO(27)      \
	ZERO(28) ZERO(29) ZERO(30) ZERO(31)
#define LOOP(name, body)                                                                   \
	static void name(long n) {                                                         \
		__asm__ volatile(ZEROS "1:\n\t" body "dec %0\n\tjnz 1b\n\t" : "+r"(n) : : "memory"); \
	}

LOOP(d16, D16)
LOOP(d16f2, D16 FM(16) FM(17))
LOOP(d16f4, D16 FM(16) FM(17) FM(18) FM(19))
LOOP(d16c2, D16 CV(24, 26) CV(25, 27))
LOOP(d16f2m2, D16 FM(16) FM(17) MU(18) MU(19))
LOOP(d16f2m2c2, D16 FM(16) FM(17) MU(18) MU(19) CV(24, 26) CV(25, 27))

int main(void) {
	const long adds = 400000000L, n = 50000000L;
	long v = 0;
	double t = now();
	for (long i = 0; i < adds; i++)
		__asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(v));
	double ghz = 4.0 * adds / (now() - t) / 1e9;
	struct {
		const char *name;
		void (*f)(long);
	} loops[] = {{"16 vpdpbusd", d16},
	             {"+ 2 FMA", d16f2},
	             {"+ 4 FMA", d16f4},
	             {"+ 2 cvt", d16c2},
	             {"+ 2 FMA, 2 mul", d16f2m2},
	             {"+ 2 FMA, 2 mul, 2 cvt (a packed step)", d16f2m2c2}};
	printf("clock ~%.2f GHz\n", ghz);
	for (unsigned i = 0; i < sizeof loops / sizeof loops[0]; i++) {
		t = now();
		loops[i].f(n);
		printf("%-40s %.2f cycles an iteration\n", loops[i].name, (now() - t) / n * ghz * 1e9);
	}
	return 0;
}
