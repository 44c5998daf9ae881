/* robotrain/robotrain.h: everything a module or program needs from librobotrain. */
#ifndef ROBOTRAIN_ROBOTRAIN_H
#define ROBOTRAIN_ROBOTRAIN_H

#include <robotrain/version.h>
#include <robotrain/error.h>
#include <robotrain/option.h>
#include <robotrain/launch-config.h>
#include <robotrain/plugin.h>
#include <robotrain/plugin-loader.h>
#include <robotrain/backend.h>
#include <robotrain/tensor.h>
#include <robotrain/graph.h>
#include <robotrain/ops.h>
#include <robotrain/loss-scale.h>
#include <robotrain/safetensors.h>
#include <robotrain/world.h>
#include <robotrain/store.h>
#include <robotrain/comm.h>
#include <robotrain/hub.h>
#include <robotrain/wandb.h>
#include <robotrain/policy.h>

#endif
