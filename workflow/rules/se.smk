rule se_curve:
    """State-evolution curve of one experiment at one (channel, T, channel parameter, rho,
    variant)."""
    output:
        update(SE_PATH),
    log:
        "logs/se_curve/{experiment}/{channel}_T{T}{cpar}_rho{rho}_{variant}.log",
    priority: 50
    conda:
        "../../environment.yml"
    threads: request("se", "threads")
    resources:
        mem_mb=request("se", "mem_mb"),
        runtime=request("se", "runtime"),
    params:
        se=se_params,
        version=script_version("se_curve"),
    script:
        "../scripts/se_curve.py"


rule theory:
    """The theory lines a figure draws next to one SE curve (aimlib.theory.lines: the spectral
    estimator's one-step prediction, the large-alpha law, the test errors)."""
    input:
        SE_PATH,
    output:
        update(THEORY_PATH),
    log:
        "logs/theory/{experiment}/{channel}_T{T}{cpar}_rho{rho}_{variant}.log",
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    params:
        theory=theory_params,
        version=script_version("theory"),
    script:
        "../scripts/theory.py"


rule se_small_width:
    """The rho -> 0 limit of the hardmax equations on an alpha_bar grid."""
    output:
        update(SMALL_WIDTH_PATH),
    log:
        "logs/se_small_width/{experiment}_{variant}.log",
    conda:
        "../../environment.yml"
    threads: 1
    resources:
        mem_mb=request("light", "mem_mb"),
        runtime=request("light", "runtime"),
    params:
        se=small_width_params,
        version=script_version("se_small_width"),
    script:
        "../scripts/se_small_width.py"
