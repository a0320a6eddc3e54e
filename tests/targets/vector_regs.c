/* A busy loop that keeps known values in all sixteen vector registers (xmm0-xmm15) and calls
 * nothing, for tests/e2e/test_record_memory.py: a thread interrupted in this loop, made to run
 * other code (scry's injected dlopen and agent calls) and let go must find its registers as
 * they were. Built there into a shared library and called through ctypes. */
#include <stdint.h>
#include <string.h>

/* Runs iters turns with the registers loaded; 1 when they hold their values at the end, else 0. */
int hold_vector_registers(uint64_t iters)
{
    uint64_t in[32], out[32];
    for (int i = 0; i < 32; i++)
        in[i] = 0x0123456789abcdefULL * (uint64_t)(i + 1);
    memset(out, 0, sizeof(out));
    __asm__ volatile("movdqu 0(%[in]), %%xmm0\n\t"
                     "movdqu 16(%[in]), %%xmm1\n\t"
                     "movdqu 32(%[in]), %%xmm2\n\t"
                     "movdqu 48(%[in]), %%xmm3\n\t"
                     "movdqu 64(%[in]), %%xmm4\n\t"
                     "movdqu 80(%[in]), %%xmm5\n\t"
                     "movdqu 96(%[in]), %%xmm6\n\t"
                     "movdqu 112(%[in]), %%xmm7\n\t"
                     "movdqu 128(%[in]), %%xmm8\n\t"
                     "movdqu 144(%[in]), %%xmm9\n\t"
                     "movdqu 160(%[in]), %%xmm10\n\t"
                     "movdqu 176(%[in]), %%xmm11\n\t"
                     "movdqu 192(%[in]), %%xmm12\n\t"
                     "movdqu 208(%[in]), %%xmm13\n\t"
                     "movdqu 224(%[in]), %%xmm14\n\t"
                     "movdqu 240(%[in]), %%xmm15\n\t"
                     "1: dec %[n]\n\t"
                     "jnz 1b\n\t"
                     "movdqu %%xmm0, 0(%[out])\n\t"
                     "movdqu %%xmm1, 16(%[out])\n\t"
                     "movdqu %%xmm2, 32(%[out])\n\t"
                     "movdqu %%xmm3, 48(%[out])\n\t"
                     "movdqu %%xmm4, 64(%[out])\n\t"
                     "movdqu %%xmm5, 80(%[out])\n\t"
                     "movdqu %%xmm6, 96(%[out])\n\t"
                     "movdqu %%xmm7, 112(%[out])\n\t"
                     "movdqu %%xmm8, 128(%[out])\n\t"
                     "movdqu %%xmm9, 144(%[out])\n\t"
                     "movdqu %%xmm10, 160(%[out])\n\t"
                     "movdqu %%xmm11, 176(%[out])\n\t"
                     "movdqu %%xmm12, 192(%[out])\n\t"
                     "movdqu %%xmm13, 208(%[out])\n\t"
                     "movdqu %%xmm14, 224(%[out])\n\t"
                     "movdqu %%xmm15, 240(%[out])\n\t"
                     : [n] "+r"(iters)
                     : [in] "r"(in), [out] "r"(out)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "memory",
                       "cc");
    return memcmp(in, out, sizeof(in)) == 0;
}
