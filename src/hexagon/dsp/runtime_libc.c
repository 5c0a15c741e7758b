/* The two C library functions the compiler may call on its own (struct copies, zeroing loops),
 * for a program linked without any C library. */
#include <stddef.h>

void* memset(void* dst, int c, size_t n) {
  volatile unsigned char* d = (volatile unsigned char*)dst; /* volatile: not turned back into memset */
  while (n--) *d++ = (unsigned char)c;
  return dst;
}

void* memcpy(void* dst, const void* src, size_t n) {
  volatile unsigned char* d = (volatile unsigned char*)dst;
  const unsigned char* s = (const unsigned char*)src;
  while (n--) *d++ = *s++;
  return dst;
}
