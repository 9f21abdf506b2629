/* The smallest program the create.* probes exec: it exits 0 at once, so the
 * measured cost is the kernel's exec and process teardown, not the program. */
int main(void) { return 0; }
