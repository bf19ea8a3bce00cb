
/*
 * fairgate: the unit tests' random numbers: xorshift64 over a state that
 * each test seeds, so that its inputs are the same at every run.
 */

#ifndef _FG_TEST_RAND_H_INCLUDED_
#define _FG_TEST_RAND_H_INCLUDED_


#include <stdint.h>


static inline uint64_t
fg_test_rand64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;

    return *s;
}


/* uniform in [0, 1), 53 bits */
static inline double
fg_test_rand01(uint64_t *s)
{
    return (double) (fg_test_rand64(s) >> 11) / 9007199254740992.0;
}


#endif /* _FG_TEST_RAND_H_INCLUDED_ */
