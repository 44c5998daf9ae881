## tests/test-dataset-corrupt: every file of the dataset fixtures (tests/data/dataset, and
## ../shared/data/real-v2.1-g1 when it is there) truncated, flipped and deleted in turn, read
## through rt_dataset_open and the reader; each outcome a success or an error naming the file.
check_PROGRAMS += tests/test-dataset-corrupt
TESTS += tests/test-dataset-corrupt
tests_test_dataset_corrupt_SOURCES = tests/test-dataset-corrupt.c
tests_test_dataset_corrupt_LDADD = $(RT_TEST_LIBS)
