## src/data: sources, tests and pages of this area (see the top-level Makefile.am).

## The Parquet reader (src/data/parquet.h): footer and page headers in the Thrift compact
## protocol, levels, encodings, codecs (libsnappy, zlib, libzstd), Arrow schema recovery.
librobotrain_la_SOURCES += \
	src/data/thrift-compact.c src/data/thrift-compact.h \
	src/data/parquet.c src/data/parquet.h src/data/parquet-private.h \
	src/data/parquet-footer.c \
	src/data/parquet-read.c \
	src/data/parquet-levels.c \
	src/data/parquet-codec.c \
	src/data/parquet-arrow.c
