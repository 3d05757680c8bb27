#!/usr/bin/env python3
import numpy as np
import sgdc_adapter            # pip install ./conformance/python

def step(case: sgdc_adapter.Case) -> dict[str, object]:
    r = case.x @ case.kernel + case.bias - case.y
    count = np.float32(case.n * case.k)
    gk = np.float32(2) * (case.x.T @ r) / count
    gb = np.float32(2) * r.sum(axis=0) / count
    return {"loss": np.sum(r * r) / count,
            "kernel": case.kernel - case.lr * gk, "bias": case.bias - case.lr * gb,
            "grad_kernel": gk, "grad_bias": gb, "step": case.step + 1}

sgdc_adapter.serve(step, name="my-step", version="1.0",
                   capabilities=("grads", "step_counter"), subnormals="ieee")
