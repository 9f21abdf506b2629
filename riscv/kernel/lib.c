/*
 * lib.c: the two functions a freestanding GCC may call on its own (for
 * struct assignment and zeroing). Nothing here is on a timed path.
 */
#include <stddef.h>

void *memset(void *dest, int c, size_t n) {
  unsigned char *d = dest;
  while (n--) *d++ = (unsigned char)c;
  return dest;
}

void *memcpy(void *dest, const void *src, size_t n) {
  unsigned char *d = dest;
  const unsigned char *s = src;
  while (n--) *d++ = *s++;
  return dest;
}
