# RT_CHECK_CUDA: --with-cuda[=DIR], --with-cudnn, --with-nccl, --with-cuda-arch.
#
# Each --with option takes check (the default), yes or no.  "yes" with something missing stops
# configure; "check" turns the feature off and records the reason for the summary.  Nothing here
# runs on a GPU: build machines have none, so the architecture list is chosen, never probed.
#
# Sets: have_cuda, have_cudnn, have_nccl (yes/no) and *_reason; AC_SUBST NVCC, NVCCFLAGS,
# CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS, CUDA_LIBDIR, CUDNN_LIBS, NCCL_LIBS, CUDA_GENCODE;
# AM_CONDITIONAL HAVE_CUDA, HAVE_CUDNN, HAVE_NCCL.
AC_DEFUN([RT_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
                    [build the CUDA backend module; DIR is the toolkit root (check/yes/no/DIR) @<:@default=check@:>@])],
    [], [with_cuda=check])
  AC_ARG_WITH([cudnn],
    [AS_HELP_STRING([--with-cudnn], [use cuDNN in the CUDA backend (check/yes/no) @<:@default=check@:>@])],
    [], [with_cudnn=check])
  AC_ARG_WITH([nccl],
    [AS_HELP_STRING([--with-nccl], [build the NCCL comm module (check/yes/no) @<:@default=check@:>@])],
    [], [with_nccl=check])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=LIST],
                    [comma-separated GPU targets: sm_XX(a) for machine code, compute_XX for PTX @<:@default=sm_90a,compute_90@:>@])],
    [], [with_cuda_arch="sm_90a,compute_90"])
  AC_ARG_VAR([NVCC], [the CUDA compiler])
  AC_ARG_VAR([NVCCFLAGS], [extra flags for the CUDA compiler])

  have_cuda=no
  have_cudnn=no
  have_nccl=no
  CUDA_EXTRA_LIBDIR=

  case "$with_cuda" in
    no) cuda_reason="disabled by --without-cuda" ;;
    yes|check) cuda_prefix=/usr/local/cuda; cuda_nvcc_path="$cuda_prefix/bin$PATH_SEPARATOR$PATH"
               cuda_nvcc_where="$cuda_prefix/bin or PATH" ;;
    *) cuda_prefix=$with_cuda; cuda_nvcc_path="$cuda_prefix/bin"; cuda_nvcc_where="$cuda_prefix/bin"
       dnl A named toolkit is used whole: nvcc from elsewhere would not match its headers.
       AS_IF([test -d "$cuda_prefix"], [],
             [AC_MSG_ERROR([--with-cuda=$with_cuda: no such directory; give the CUDA toolkit root, the directory with bin/nvcc and include/cuda_runtime.h])]) ;;
  esac

  AS_IF([test "x$with_cuda" != xno], [
    AC_PATH_PROG([NVCC], [nvcc], [no], [$cuda_nvcc_path])
    AS_IF([test "x$NVCC" = xno], [cuda_reason="nvcc not found in $cuda_nvcc_where"], [
      # The toolkit root is where nvcc lives, unless DIR said otherwise.
      AS_CASE([$with_cuda], [yes|check], [cuda_prefix=`AS_DIRNAME(["$NVCC"])`; cuda_prefix=`AS_DIRNAME(["$cuda_prefix"])`])
      for d in lib64 lib; do
        AS_IF([test -z "$CUDA_LIBDIR" && test -f "$cuda_prefix/$d/libcudart.so"], [CUDA_LIBDIR=$cuda_prefix/$d])
      done
      AS_IF([test -z "$CUDA_LIBDIR"], [CUDA_LIBDIR=$cuda_prefix/lib64])
      # -isystem: the toolkit's headers are not ours to warn about (cublasLt.h trips -Wstrict-prototypes).
      CUDA_CPPFLAGS="-isystem $cuda_prefix/include"
      CUDA_LDFLAGS="-L$CUDA_LIBDIR"
      # NCCL and cuDNN may sit in a sibling lib directory of the same toolkit.
      AS_IF([test -d "$cuda_prefix/lib" && test "$CUDA_LIBDIR" != "$cuda_prefix/lib"],
            [CUDA_LDFLAGS="$CUDA_LDFLAGS -L$cuda_prefix/lib"; CUDA_EXTRA_LIBDIR=$cuda_prefix/lib])
      rt_save_CPPFLAGS=$CPPFLAGS; rt_save_LDFLAGS=$LDFLAGS; rt_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
      AC_CHECK_HEADER([cuda_runtime.h], [
        AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [
          AC_CHECK_LIB([cublas], [cublasCreate_v2], [
            AC_CHECK_LIB([cublasLt], [cublasLtCreate], [
              have_cuda=yes
              CUDA_LIBS="-lcudart -lcublas -lcublasLt"
            ], [cuda_reason="libcublasLt not found in $CUDA_LIBDIR"])
          ], [cuda_reason="libcublas not found in $CUDA_LIBDIR"])
        ], [cuda_reason="libcudart not found in $CUDA_LIBDIR"])
      ], [cuda_reason="cuda_runtime.h not found in $cuda_prefix/include"])

      AS_IF([test "x$have_cuda" = xyes && test "x$with_cudnn" != xno], [
        AC_CHECK_HEADER([cudnn.h], [
          AC_CHECK_LIB([cudnn], [cudnnCreate], [have_cudnn=yes; CUDNN_LIBS=-lcudnn],
                       [cudnn_reason="libcudnn not found"])
        ], [cudnn_reason="cudnn.h not found"])
      ])
      AS_IF([test "x$have_cuda" = xyes && test "x$with_nccl" != xno], [
        AC_CHECK_HEADER([nccl.h], [
          AC_CHECK_LIB([nccl], [ncclCommInitRank], [have_nccl=yes; NCCL_LIBS=-lnccl],
                       [nccl_reason="libnccl not found"])
        ], [nccl_reason="nccl.h not found"])
      ])
      CPPFLAGS=$rt_save_CPPFLAGS; LDFLAGS=$rt_save_LDFLAGS; LIBS=$rt_save_LIBS
    ])
  ])

  AS_IF([test "x$have_cuda" = xno], [
    AS_IF([test "x$with_cudnn" != xno], [cudnn_reason="needs the CUDA backend"], [cudnn_reason="disabled by --without-cudnn"])
    AS_IF([test "x$with_nccl" != xno], [nccl_reason="needs CUDA"], [nccl_reason="disabled by --without-nccl"])
  ])
  AS_IF([test "x$with_cudnn" = xno], [cudnn_reason="disabled by --without-cudnn"])
  AS_IF([test "x$with_nccl" = xno], [nccl_reason="disabled by --without-nccl"])

  dnl An explicit request that cannot be met is an error, not a silent downgrade.
  AS_IF([test "x$with_cuda" != xno && test "x$with_cuda" != xcheck && test "x$have_cuda" = xno],
        [AC_MSG_ERROR([--with-cuda was given but $cuda_reason])])
  AS_IF([test "x$with_cudnn" = xyes && test "x$have_cudnn" = xno],
        [AC_MSG_ERROR([--with-cudnn was given but $cudnn_reason])])
  AS_IF([test "x$with_nccl" = xyes && test "x$have_nccl" = xno],
        [AC_MSG_ERROR([--with-nccl was given but $nccl_reason])])

  dnl --with-cuda-arch=sm_90a,compute_90 -> -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90
  AS_IF([test "x$have_cuda" = xyes], [
    CUDA_ARCH=$with_cuda_arch
    for a in `echo "$with_cuda_arch" | tr ',' ' '`; do
      AS_CASE([$a],
        [sm_*], [v=`echo "$a" | sed 's/^sm_//'`; CUDA_GENCODE="$CUDA_GENCODE -gencode arch=compute_$v,code=sm_$v"],
        [compute_*], [CUDA_GENCODE="$CUDA_GENCODE -gencode arch=$a,code=$a"],
        [AC_MSG_ERROR([--with-cuda-arch: '$a' is neither sm_XX nor compute_XX (example: sm_90a,compute_90)])])
    done
    AC_DEFINE([HAVE_CUDA], [1], [Define if the CUDA backend is built])
  ])
  AS_IF([test "x$have_cudnn" = xyes], [AC_DEFINE([HAVE_CUDNN], [1], [Define if cuDNN is used])])
  AS_IF([test "x$have_nccl" = xyes], [AC_DEFINE([HAVE_NCCL], [1], [Define if the NCCL module is built])])
  CUDA_RPATH="-R$CUDA_LIBDIR"
  AS_IF([test -n "$CUDA_EXTRA_LIBDIR"], [CUDA_RPATH="$CUDA_RPATH -R$CUDA_EXTRA_LIBDIR"])
  AC_SUBST([CUDA_ARCH])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([CUDA_LIBDIR])
  AC_SUBST([CUDA_RPATH])
  AC_SUBST([CUDNN_LIBS])
  AC_SUBST([NCCL_LIBS])
  AC_SUBST([CUDA_GENCODE])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
  AM_CONDITIONAL([HAVE_CUDNN], [test "x$have_cudnn" = xyes])
  AM_CONDITIONAL([HAVE_NCCL], [test "x$have_nccl" = xyes])
])
