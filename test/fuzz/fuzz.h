/*-------------------------------------------------------------------------
 *
 * fuzz.h
 *	  What every fuzz target shares: the libFuzzer entry point and the check
 *	  that turns a broken property into a crash libFuzzer reports.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_FUZZ_H
#define QC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property of the code under test that the input broke. */
#define FUZZ_CHECK(cond, what) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "fuzz: property broken at %s:%d: %s\n", \
					__FILE__, __LINE__, (what)); \
			abort(); \
		} \
	} while (0)

#endif							/* QC_FUZZ_H */
