rule gd:
    """GD from K initialisations at one point, every seed (GD = the first, AGD = their mean)."""
    output:
        GD_PATH,
    params:
        gd=gd_params,
        seeds=stage_seeds("gd"),
        base_seed=config["seed"],
        version=code_version("gd", "generalisation", "aggregate", "io"),
    log:
        "logs/gd/{experiment}/{channel}_{variant}/T{T}_beta{beta}_rho{rho}_d{d}_alpha{alpha}.log",
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
        gd_agg_inputs,
    output:
        GD_AGG_PATH,
    params:
        version=code_version("aggregate", "io"),
    log:
        "logs/gd_aggregate/{experiment}/{kind}_{channel}_{variant}_T{T}_beta{beta}_rho{rho}_d{d}.log",
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    conda:
        "../../environment.yml"
    script:
        "../scripts/aggregate.py"
