/* robotrain/robotrain.h: everything a module or program needs from librobotrain. */
#ifndef ROBOTRAIN_ROBOTRAIN_H
#define ROBOTRAIN_ROBOTRAIN_H

#include <robotrain/version.h>
#include <robotrain/error.h>
#include <robotrain/option.h>
#include <robotrain/plugin.h>
#include <robotrain/backend.h>
#include <robotrain/tensor.h>
#include <robotrain/graph.h>
#include <robotrain/ops.h>

#endif
