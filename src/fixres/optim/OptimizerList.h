// The optimizers, one line each: FIXRES_OPTIMIZER(name) names the function of the optimizer's own
// file that returns its descriptor (const OptimizerDescriptor& name()). --opt lists them in this
// order. Included by Optimizers.cpp only.
FIXRES_OPTIMIZER(sgdOptimizer)      // Sgd.cpp
FIXRES_OPTIMIZER(adamwOptimizer)    // Adamw.cpp
FIXRES_OPTIMIZER(rmspropOptimizer)  // Rmsprop.cpp
FIXRES_OPTIMIZER(larsOptimizer)     // Lars.cpp
FIXRES_OPTIMIZER(lambOptimizer)     // Lamb.cpp
