/* Unit tests for the unwind-table reader (reader/eh_frame.h) over hand-built .eh_frame_hdr and
 * .eh_frame images: the largest function found through both CIE kinds gcc emits ("zR", and
 * "zPLR" with a personality routine), the eval-loop rule (a named largest function is not the
 * loop; a small one is not either), and tables it must refuse rather than misread. */
#include <stdint.h>
#include <string.h>

#include "reader/eh_frame.h"
#include "testlib.h"

#define BASE 0x10000u /* the image's first byte's address */
#define HDR BASE
#define EH (BASE + 0x100u)

struct image {
    uint8_t b[0x400];
    size_t at; /* where the next byte of .eh_frame goes (offset in b) */
};

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int image_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    struct image *im = ctx;
    if (addr < BASE || addr - BASE > sizeof(im->b) || len > sizeof(im->b) - (addr - BASE))
        return -1;
    memcpy(buf, im->b + (addr - BASE), len);
    return 0;
}

/* A CIE at im->at; personality: "zPLR" (a pcrel sdata4 personality pointer, an LSDA encoding)
 * instead of "zR". Returns its address. */
static uint32_t add_cie(struct image *im, int personality)
{
    uint32_t addr = BASE + (uint32_t)im->at;
    uint8_t *p = im->b + im->at;
    uint8_t body[32];
    size_t n = 0;
    put32(body + n, 0); /* CIE id */
    n += 4;
    body[n++] = 1; /* version */
    const char *aug = personality ? "zPLR" : "zR";
    memcpy(body + n, aug, strlen(aug) + 1);
    n += strlen(aug) + 1;
    body[n++] = 1;    /* code alignment */
    body[n++] = 0x78; /* data alignment -8 */
    body[n++] = 16;   /* return address register */
    if (personality) {
        body[n++] = 7; /* augmentation data: 1 + 4 + 1 + 1 */
        body[n++] = 0x9b; /* personality: indirect pcrel sdata4 (skipped, not followed) */
        put32(body + n, 0x1234);
        n += 4;
        body[n++] = 0x1b; /* LSDA encoding */
        body[n++] = 0x1b; /* FDE encoding */
    } else {
        body[n++] = 1;
        body[n++] = 0x1b;
    }
    while (n % 4)
        body[n++] = 0; /* DW_CFA_nop */
    put32(p, (uint32_t)n);
    memcpy(p + 4, body, n);
    im->at += 4 + n;
    return addr;
}

/* An FDE of [pc, pc + size) under the CIE at cie; returns its address. */
static uint32_t add_fde(struct image *im, uint32_t cie, uint32_t pc, uint32_t size, int lsda)
{
    uint32_t addr = BASE + (uint32_t)im->at;
    uint8_t *p = im->b + im->at;
    size_t n = 4 + 4 + 4 + 1 + (lsda ? 4 : 0);
    while (n % 4)
        n++;
    put32(p, (uint32_t)n);
    put32(p + 4, addr + 4 - cie);            /* CIE pointer, from this field */
    put32(p + 8, pc - (addr + 8));           /* pc_begin, pcrel */
    put32(p + 12, size);                     /* pc_range */
    p[16] = lsda ? 4 : 0;                    /* augmentation data length */
    im->at += 4 + n;
    return addr;
}

/* The header with a sorted table of the FDEs (pc, fde address) given. */
static void add_hdr(struct image *im, const uint32_t (*fdes)[2], int n)
{
    uint8_t *h = im->b + (HDR - BASE);
    h[0] = 1;
    h[1] = 0x1b; /* eh_frame_ptr: pcrel sdata4 */
    h[2] = 0x03; /* fde_count: udata4 */
    h[3] = 0x3b; /* table: datarel sdata4 */
    put32(h + 4, EH - (HDR + 4));
    put32(h + 8, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        put32(h + 12 + 8 * i, fdes[i][0] - HDR);
        put32(h + 16 + 8 * i, fdes[i][1] - HDR);
    }
}

/* Three functions: 256 B, 20 KiB (the largest, under the "zPLR" CIE) and 8 KiB. */
static void build(struct image *im)
{
    memset(im, 0, sizeof(*im));
    im->at = EH - BASE;
    uint32_t c1 = add_cie(im, 0);
    uint32_t c2 = add_cie(im, 1);
    uint32_t fdes[3][2] = {{0x400000, 0}, {0x401000, 0}, {0x410000, 0}};
    fdes[0][1] = add_fde(im, c1, 0x400000, 0x100, 0);
    fdes[1][1] = add_fde(im, c2, 0x401000, 0x5000, 1);
    fdes[2][1] = add_fde(im, c1, 0x410000, 0x2000, 0);
    add_hdr(im, (const uint32_t (*)[2])fdes, 3);
}

static const char *no_name(void *ctx, uint64_t addr)
{
    (void)ctx;
    (void)addr;
    return NULL;
}

static const char *named_other(void *ctx, uint64_t addr)
{
    (void)ctx;
    return addr == 0x401000 ? "some_big_function" : NULL;
}

static const char *named_eval(void *ctx, uint64_t addr)
{
    (void)ctx;
    return addr == 0x401000 ? "_PyEval_EvalFrameDefault" : NULL;
}

static void test_largest_function(void)
{
    static struct image im;
    build(&im);
    uint64_t s = 0, e = 0;
    CHECK_EQ(ehf_largest_function(image_read, &im, HDR, &s, &e), 0);
    CHECK_EQ_U64(s, 0x401000);
    CHECK_EQ_U64(e, 0x406000);
}

static void test_eval_loop_rule(void)
{
    static struct image im;
    build(&im);
    uint64_t s = 0, e = 0;
    CHECK_EQ(ehf_eval_loop(image_read, &im, HDR, no_name, &s, &e), 0);
    CHECK_EQ_U64(s, 0x401000);
    CHECK_EQ(ehf_eval_loop(image_read, &im, HDR, named_eval, &s, &e), 0);
    s = e = 7;
    CHECK_EQ(ehf_eval_loop(image_read, &im, HDR, named_other, &s, &e), -1);
    CHECK_EQ_U64(s, 7); /* nothing set */
    /* a largest function of 8 KiB is no eval loop */
    uint32_t fde1 = 0;
    memcpy(&fde1, im.b + (HDR - BASE) + 24, 4); /* table entry 1's FDE */
    uint8_t *range = im.b + (HDR + fde1 - BASE) + 12;
    put32(range, 0x1800);
    CHECK_EQ(ehf_largest_function(image_read, &im, HDR, &s, &e), 0);
    CHECK_EQ_U64(s, 0x410000);
    CHECK_EQ(ehf_eval_loop(image_read, &im, HDR, no_name, &s, &e), -1);
}

static void test_refusals(void)
{
    static struct image im;
    uint64_t s, e;
    build(&im);
    im.b[0] = 2; /* a header version it does not know */
    CHECK_EQ(ehf_largest_function(image_read, &im, HDR, &s, &e), -1);
    build(&im);
    im.b[3] = 0xff; /* no search table */
    CHECK_EQ(ehf_largest_function(image_read, &im, HDR, &s, &e), -1);
    build(&im);
    put32(im.b + 8, 1000); /* more entries than the image holds: reads fail */
    CHECK_EQ(ehf_largest_function(image_read, &im, HDR, &s, &e), -1);
    build(&im);
    uint32_t fde0 = 0;
    memcpy(&fde0, im.b + 16, 4);
    put32(im.b + (HDR + fde0 - BASE) + 4, 0); /* an FDE whose CIE pointer is 0 */
    CHECK_EQ(ehf_largest_function(image_read, &im, HDR, &s, &e), -1);
    build(&im);
    memcpy(im.b + (EH - BASE) + 9, "zX", 2); /* an augmentation it cannot skip */
    CHECK_EQ(ehf_largest_function(image_read, &im, HDR, &s, &e), -1);
}

static const struct tl_test tests[] = {
    TL(test_largest_function),
    TL(test_eval_loop_rule),
    TL(test_refusals),
};
TL_MAIN(tests)
