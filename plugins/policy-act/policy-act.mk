## plugins/policy-act: the ACT policy module (see the top-level Makefile.am).
