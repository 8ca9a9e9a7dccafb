rule teacher:
    """Teacher W*, labels and token seed for one (channel, T, beta, rho, d, alpha, seed)."""
    output:
        TEACHER_PATH,
    params:
        base_seed=config["seed"],
        version=code_version("model", "channels", "io"),
    log:
        "logs/teacher/{channel}/T{T}_beta{beta}_rho{rho}_d{d}_alpha{alpha}_seed{seed}.log",
    threads: request("teacher", "threads")
    resources:
        mem_mb=request("teacher", "mem_mb"),
        runtime=request("teacher", "runtime"),
    conda:
        "../../environment.yml"
    script:
        "../scripts/teacher.py"
