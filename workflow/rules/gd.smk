rule gd:
    """GD from K initialisations at one point, every seed (GD = the first, AGD = their mean)."""
    output:
        GD_PATH,
    params:
        job=group_params("gd"),
        base_seed=PLAN.base_seed,
        version=script_version("gd"),
    log:
        "logs/gd/{experiment}/{channel}_{variant}/T{T}_{cpar}_rho{rho}_d{d}_alpha{alpha}.log",
    threads: request("gd", "threads")
    resources:
        mem_mb=request("gd", "mem_mb"),
        runtime=request("gd", "runtime"),
    conda:
        "../../environment.yml"
    script:
        "../scripts/gd.py"


rule gd_aggregate:
    """Mean and std over seeds of the GD (first initialisation) or AGD error, per alpha."""
    input:
        agg_inputs("gd"),
    output:
        GD_AGG_PATH,
    params:
        version=script_version("aggregate"),
    log:
        "logs/gd_aggregate/{experiment}/{kind}_{channel}_{variant}_T{T}_{cpar}_rho{rho}_d{d}.log",
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    conda:
        "../../environment.yml"
    script:
        "../scripts/aggregate.py"
