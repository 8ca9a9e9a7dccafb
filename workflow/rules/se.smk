rule se_curve:
    """State-evolution curve of one experiment at one (channel, T, channel parameter, rho,
    variant)."""
    output:
        SE_PATH,
    params:
        se=se_params,
        version=script_version("se_curve"),
    log:
        "logs/se_curve/{experiment}/{channel}_T{T}_{cpar}_rho{rho}_{variant}.log",
    priority: 50
    threads: request("se", "threads")
    resources:
        mem_mb=request("se", "mem_mb"),
        runtime=request("se", "runtime"),
    conda:
        "../../environment.yml"
    script:
        "../scripts/se_curve.py"


rule se_small_width:
    """The rho -> 0 limit of the hardmax equations on an alpha_bar grid."""
    output:
        SMALL_WIDTH_PATH,
    params:
        se=small_width_params,
        version=script_version("se_small_width"),
    log:
        "logs/se_small_width/{experiment}_{variant}.log",
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    conda:
        "../../environment.yml"
    script:
        "../scripts/se_small_width.py"
