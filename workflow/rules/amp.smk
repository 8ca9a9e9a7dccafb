rule amp:
    """AMP at one point, every seed (teacher data drawn in the job)."""
    output:
        AMP_PATH,
    params:
        job=group_params("amp"),
        base_seed=PLAN.base_seed,
        version=script_version("amp"),
    log:
        "logs/amp/{experiment}/{channel}_{variant}/T{T}_{cpar}_rho{rho}_d{d}_alpha{alpha}.log",
    threads: request("amp", "threads")
    resources:
        mem_mb=request("amp", "mem_mb"),
        runtime=request("amp", "runtime"),
    conda:
        "../../environment.yml"
    script:
        "../scripts/amp.py"


rule amp_aggregate:
    """Mean, std and number converged over seeds, per alpha, for one AMP group."""
    input:
        agg_inputs("amp"),
    output:
        AMP_AGG_PATH,
    params:
        version=script_version("aggregate"),
    log:
        "logs/amp_aggregate/{experiment}/{channel}_{variant}_T{T}_{cpar}_rho{rho}_d{d}.log",
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    conda:
        "../../environment.yml"
    script:
        "../scripts/aggregate.py"
