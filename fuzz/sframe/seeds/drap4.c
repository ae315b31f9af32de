void use(void *, long);
int h(long a,long b,long c,long d,long e,long f,long g, long hh) { int x[8] __attribute__((aligned(64))); char v[a]; x[a&7]=g+hh; use(x, hh); use(v,0); return x[1]; }
