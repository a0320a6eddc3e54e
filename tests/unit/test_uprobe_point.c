/* The probe point past a NULL test (src/ebpf/uprobe_point.c): glibc 2.36's free and variants,
 * and every shape that must fall back to the entry. */
#include "ebpf/uprobe_point.h"
#include "testlib.h"

static void test_glibc_free(void)
{
    /* glibc 2.36 x86-64 free: test %rdi,%rdi; je rel32; push %rbp */
    const uint8_t c[] = {0x48, 0x85, 0xff, 0x0f, 0x84, 0xbf, 0x00, 0x00, 0x00, 0x55, 0x48};
    CHECK_EQ(up_after_null_test(c, sizeof(c)), 9);
    /* with endbr64, je rel8 and push %r12 */
    const uint8_t d[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x85, 0xff, 0x74, 0x10, 0x41, 0x54};
    CHECK_EQ(up_after_null_test(d, sizeof(d)), 9);
}

static void test_fallbacks(void)
{
    const uint8_t push_first[] = {0x41, 0x54, 0x55, 0x53};       /* malloc: a push already */
    const uint8_t no_push[] = {0x48, 0x85, 0xff, 0x74, 0x10, 0x48, 0x89, 0xfb}; /* then a mov */
    const uint8_t other_reg[] = {0x48, 0x85, 0xf6, 0x74, 0x10, 0x55};           /* test %rsi */
    const uint8_t jne[] = {0x48, 0x85, 0xff, 0x75, 0x10, 0x55};                 /* jne, not je */
    const uint8_t cut[] = {0x48, 0x85, 0xff, 0x0f, 0x84, 0xbf, 0x00, 0x00, 0x00}; /* no byte 9 */
    const uint8_t cut_r[] = {0x48, 0x85, 0xff, 0x74, 0x10, 0x41};  /* a REX prefix, no opcode */
    CHECK_EQ(up_after_null_test(push_first, sizeof(push_first)), 0);
    CHECK_EQ(up_after_null_test(no_push, sizeof(no_push)), 0);
    CHECK_EQ(up_after_null_test(other_reg, sizeof(other_reg)), 0);
    CHECK_EQ(up_after_null_test(jne, sizeof(jne)), 0);
    CHECK_EQ(up_after_null_test(cut, sizeof(cut)), 0);
    CHECK_EQ(up_after_null_test(cut_r, sizeof(cut_r)), 0);
    CHECK_EQ(up_after_null_test(push_first, 0), 0);
}

static const struct tl_test tests[] = {TL(test_glibc_free), TL(test_fallbacks)};
TL_MAIN(tests)
