//go:build amd64 && !purego

#include "textflag.h"

// func scanStringAVX2(b []byte, i int, surr bool) int
//
// scanStringAVX2 checks string content from b[i] on, 32 bytes at a time, and returns the
// index of the closing quote, or -1 when the content is not valid up to a closing quote
// (a bad escape, a control character, invalid UTF-8, or the end of the input): the caller
// then scans the string again with the portable code, which tells the exact error. b[i] must
// not be inside an escape or a UTF-8 sequence, and len(b) must be at least 32.
//
// Per block of 32 bytes: the escaped bytes follow from the backslashes by the carry trick of
// simdjson (odd runs of backslashes), the first unescaped quote ends the string, and every
// byte up to and including it must be no control character, an escaped byte must be one of
// "\/bfnrtu, the four bytes after an escaped u must be hex digits, and the UTF-8 must be
// valid, checked by the lookup method of Keiser and Lemire. A block that does not fit before
// the end of b is copied to the stack and padded with NUL bytes, which a string cannot hold,
// so that the loads never reach past the end of b.
//
// Registers: SI = &b[0], DX = len(b), AX = i, BX = escape carry (0/1), DI = hex digits due in
// the next block, CX = the previous block ends inside a UTF-8 sequence; Y0 = block,
// Y1 = previous block; Y7..Y15 constants.
TEXT ·scanStringAVX2(SB), NOSPLIT, $96-48
	MOVQ b_base+0(FP), SI
	MOVQ b_len+8(FP), DX
	MOVQ i+24(FP), AX
	LEAQ utf8B1High<>(SB), R8
	CMPB surr+32(FP), $0
	JEQ  strict
	LEAQ utf8B1HighSurr<>(SB), R8

strict:
	XORQ   BX, BX
	XORQ   DI, DI
	XORQ   CX, CX
	VPXOR  Y1, Y1, Y1
	VMOVDQU bcQuote<>(SB), Y7
	VMOVDQU bcBackslash<>(SB), Y8
	VMOVDQU bc1F<>(SB), Y9
	VMOVDQU bc0F<>(SB), Y10
	VMOVDQU classLo<>(SB), Y11
	VMOVDQU classHi<>(SB), Y12
	VPXOR  Y13, Y13, Y13
	VMOVDQU (R8), Y14
	VMOVDQU utf8B1Low<>(SB), Y15

loop:
	LEAQ    32(AX), R9
	CMPQ    R9, DX
	JGT     tail
	VMOVDQU (SI)(AX*1), Y0

block:
	// Control characters: accumulated errors in R11. Escapes: E (R10) = the bytes escaped
	// by a backslash, none unless the block has backslashes or the last one carries one.
	VPMINUB   Y9, Y0, Y4
	VPCMPEQB  Y0, Y4, Y4
	VPMOVMSKB Y4, R11
	VPCMPEQB  Y8, Y0, Y2
	VPMOVMSKB Y2, R9
	MOVQ      R9, R10
	ORQ       BX, R10
	ORQ       DI, R10
	JZ        end
	MOVQ      BX, R10
	NOTQ      R10
	ANDQ      R10, R9                // backslashes that are not themselves escaped
	MOVQ      R9, R8
	SHLQ      $1, R8
	ORQ       BX, R8                 // follows_escape
	MOVQ      $0x55555555, R12       // even bits
	MOVQ      R12, R10
	NOTQ      R10
	ANDQ      R9, R10
	MOVQ      R8, R13
	NOTQ      R13
	ANDQ      R13, R10               // odd_sequence_starts
	ADDQ      R9, R10                // sequences_starting_on_even_bits, carry in bit 32
	MOVQ      R10, BX
	SHRQ      $32, BX
	ANDQ      $1, BX                 // escape carry into the next block
	SHLQ      $1, R10
	XORQ      R12, R10
	ANDQ      R8, R10
	MOVL      R10, R10               // E, 32 bits

	// Character classes by nibble lookup: escape letters (bits 0-3), hex digits (bits 4-5).
	VPSRLW    $4, Y0, Y3
	VPAND     Y10, Y3, Y3            // high nibbles
	VPAND     Y10, Y0, Y2            // low nibbles
	VPSHUFB   Y2, Y11, Y2
	VPSHUFB   Y3, Y12, Y4
	VPAND     Y4, Y2, Y2             // classes
	VPAND     Y10, Y2, Y4
	VPCMPEQB  Y13, Y4, Y4
	VPMOVMSKB Y4, R12                // not an escape letter
	ANDQ      R10, R12
	ORQ       R12, R11

	// \u: the four bytes after an escaped u must be hex digits.
	VPCMPEQB  bcU<>(SB), Y0, Y4
	VPMOVMSKB Y4, R12
	ANDQ      R10, R12               // escaped u
	SHLQ      $1, R12
	MOVQ      R12, R13
	SHLQ      $1, R13
	ORQ       R13, R12
	MOVQ      R12, R13
	SHLQ      $2, R13
	ORQ       R13, R12
	ORQ       DI, R12                // positions that must be hex digits
	MOVQ      R12, DI
	SHRQ      $32, DI
	VPAND     bc30<>(SB), Y2, Y4
	VPCMPEQB  Y13, Y4, Y4
	VPMOVMSKB Y4, R13                // not a hex digit
	ANDQ      R13, R12
	ORQ       R12, R11

end:
	// The end: the first unescaped quote; R9 = the bits up to and including it (or all).
	VPCMPEQB  Y7, Y0, Y4
	VPMOVMSKB Y4, R12
	NOTQ      R10
	ANDQ      R10, R12
	BTSQ      $32, R12
	LEAQ      -1(R12), R9
	XORQ      R12, R9

	// UTF-8, unless the block is ASCII and the previous one ended complete.
	VPMOVMSKB Y0, R13
	ORQ       CX, R13
	JZ        ascii
	VPSRLW    $4, Y0, Y3
	VPAND     Y10, Y3, Y3            // high nibbles
	VPERM2I128 $0x21, Y0, Y1, Y4
	VPALIGNR  $15, Y4, Y0, Y5        // prev1
	VPSRLW    $4, Y5, Y6
	VPAND     Y10, Y6, Y6
	VPSHUFB   Y6, Y14, Y6            // byte 1 high
	VPAND     Y10, Y5, Y5
	VPSHUFB   Y5, Y15, Y5            // byte 1 low
	VPAND     Y6, Y5, Y5
	VMOVDQU   utf8B2High<>(SB), Y6
	VPSHUFB   Y3, Y6, Y6             // byte 2 high
	VPAND     Y6, Y5, Y5             // special cases
	VPALIGNR  $14, Y4, Y0, Y6        // prev2
	VPSUBUSB  bc60<>(SB), Y6, Y6
	VPALIGNR  $13, Y4, Y0, Y4        // prev3
	VPSUBUSB  bc70<>(SB), Y4, Y4
	VPOR      Y4, Y6, Y6
	VPAND     bc80<>(SB), Y6, Y6     // must be a second or third continuation
	VPXOR     Y6, Y5, Y5
	VPCMPEQB  Y13, Y5, Y5
	VPMOVMSKB Y5, R13
	NOTL      R13
	ORQ       R13, R11
	VPSUBUSB  incompleteMax<>(SB), Y0, Y4
	VPTEST    Y4, Y4
	SETNE     CX
	MOVBQZX   CX, CX
	JMP       check

ascii:
	XORQ CX, CX

check:
	ANDQ R9, R11
	JNZ  fail
	BSFQ R12, R13
	CMPQ R13, $32
	JLT  found
	ADDQ $32, AX
	VMOVDQA Y0, Y1
	JMP  loop

found:
	ADDQ R13, AX
	MOVQ AX, ret+40(FP)
	VZEROUPPER
	RET

tail:
	// Copy b[i:] to the stack, padded with NUL bytes: store the last 32 bytes of b so that
	// they end at 32+r(SP), then the padding at 32+r(SP) on, and load 32(SP).
	MOVQ    DX, R9
	SUBQ    AX, R9                   // r = len(b) - i
	JLE     fail
	VMOVDQU -32(SI)(DX*1), Y4
	VMOVDQU Y4, 0(SP)(R9*1)
	VMOVDQU Y13, 32(SP)(R9*1)
	VMOVDQU 32(SP), Y0
	JMP     block

fail:
	MOVQ $-1, ret+40(FP)
	VZEROUPPER
	RET

DATA classLo<>+0(SB)/8, $0x10347838303d3010
DATA classLo<>+8(SB)/8, $0x0104000200001010
DATA classLo<>+16(SB)/8, $0x10347838303d3010
DATA classLo<>+24(SB)/8, $0x0104000200001010
GLOBL classLo<>(SB), (NOPTR+RODATA), $32
DATA classHi<>+0(SB)/8, $0x4824022010010000
DATA classHi<>+8(SB)/8, $0x0000000000000000
DATA classHi<>+16(SB)/8, $0x4824022010010000
DATA classHi<>+24(SB)/8, $0x0000000000000000
GLOBL classHi<>(SB), (NOPTR+RODATA), $32
DATA utf8B1High<>+0(SB)/8, $0x0202020202020202
DATA utf8B1High<>+8(SB)/8, $0x4915012180808080
DATA utf8B1High<>+16(SB)/8, $0x0202020202020202
DATA utf8B1High<>+24(SB)/8, $0x4915012180808080
GLOBL utf8B1High<>(SB), (NOPTR+RODATA), $32
DATA utf8B1HighSurr<>+0(SB)/8, $0x0202020202020202
DATA utf8B1HighSurr<>+8(SB)/8, $0x4905012180808080
DATA utf8B1HighSurr<>+16(SB)/8, $0x0202020202020202
DATA utf8B1HighSurr<>+24(SB)/8, $0x4905012180808080
GLOBL utf8B1HighSurr<>(SB), (NOPTR+RODATA), $32
DATA utf8B1Low<>+0(SB)/8, $0xcbcbcb8b8383a3e7
DATA utf8B1Low<>+8(SB)/8, $0xcbcbdbcbcbcbcbcb
DATA utf8B1Low<>+16(SB)/8, $0xcbcbcb8b8383a3e7
DATA utf8B1Low<>+24(SB)/8, $0xcbcbdbcbcbcbcbcb
GLOBL utf8B1Low<>(SB), (NOPTR+RODATA), $32
DATA utf8B2High<>+0(SB)/8, $0x0101010101010101
DATA utf8B2High<>+8(SB)/8, $0x01010101babaaee6
DATA utf8B2High<>+16(SB)/8, $0x0101010101010101
DATA utf8B2High<>+24(SB)/8, $0x01010101babaaee6
GLOBL utf8B2High<>(SB), (NOPTR+RODATA), $32
DATA bcQuote<>+0(SB)/8, $0x2222222222222222
DATA bcQuote<>+8(SB)/8, $0x2222222222222222
DATA bcQuote<>+16(SB)/8, $0x2222222222222222
DATA bcQuote<>+24(SB)/8, $0x2222222222222222
GLOBL bcQuote<>(SB), (NOPTR+RODATA), $32
DATA bcBackslash<>+0(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA bcBackslash<>+8(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA bcBackslash<>+16(SB)/8, $0x5c5c5c5c5c5c5c5c
DATA bcBackslash<>+24(SB)/8, $0x5c5c5c5c5c5c5c5c
GLOBL bcBackslash<>(SB), (NOPTR+RODATA), $32
DATA bc1F<>+0(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA bc1F<>+8(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA bc1F<>+16(SB)/8, $0x1f1f1f1f1f1f1f1f
DATA bc1F<>+24(SB)/8, $0x1f1f1f1f1f1f1f1f
GLOBL bc1F<>(SB), (NOPTR+RODATA), $32
DATA bc0F<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bc0F<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bc0F<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bc0F<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL bc0F<>(SB), (NOPTR+RODATA), $32
DATA bc30<>+0(SB)/8, $0x3030303030303030
DATA bc30<>+8(SB)/8, $0x3030303030303030
DATA bc30<>+16(SB)/8, $0x3030303030303030
DATA bc30<>+24(SB)/8, $0x3030303030303030
GLOBL bc30<>(SB), (NOPTR+RODATA), $32
DATA bcU<>+0(SB)/8, $0x7575757575757575
DATA bcU<>+8(SB)/8, $0x7575757575757575
DATA bcU<>+16(SB)/8, $0x7575757575757575
DATA bcU<>+24(SB)/8, $0x7575757575757575
GLOBL bcU<>(SB), (NOPTR+RODATA), $32
DATA bc60<>+0(SB)/8, $0x6060606060606060
DATA bc60<>+8(SB)/8, $0x6060606060606060
DATA bc60<>+16(SB)/8, $0x6060606060606060
DATA bc60<>+24(SB)/8, $0x6060606060606060
GLOBL bc60<>(SB), (NOPTR+RODATA), $32
DATA bc70<>+0(SB)/8, $0x7070707070707070
DATA bc70<>+8(SB)/8, $0x7070707070707070
DATA bc70<>+16(SB)/8, $0x7070707070707070
DATA bc70<>+24(SB)/8, $0x7070707070707070
GLOBL bc70<>(SB), (NOPTR+RODATA), $32
DATA bc80<>+0(SB)/8, $0x8080808080808080
DATA bc80<>+8(SB)/8, $0x8080808080808080
DATA bc80<>+16(SB)/8, $0x8080808080808080
DATA bc80<>+24(SB)/8, $0x8080808080808080
GLOBL bc80<>(SB), (NOPTR+RODATA), $32
DATA incompleteMax<>+0(SB)/8, $0xffffffffffffffff
DATA incompleteMax<>+8(SB)/8, $0xffffffffffffffff
DATA incompleteMax<>+16(SB)/8, $0xffffffffffffffff
DATA incompleteMax<>+24(SB)/8, $0xbfdfefffffffffff
GLOBL incompleteMax<>(SB), (NOPTR+RODATA), $32
