<#
.SYNOPSIS
    Build the Windows one-folder app: .build\dist\citewise\ with Citewise.exe (the window),
    citewise-cli.exe (the command line), citewise-version.txt and BUILD_ID, plus
    Citewise-<version>-windows-x64.zip of that folder to hand out.

.DESCRIPTION
    The Windows twin of packaging/build.sh, running the same spec (packaging/citewise.spec).

    Needs, on a Windows 10/11 x64 machine:
      - Python 3.11 x64 from python.org, with the "py" launcher (the default install), or
        the interpreter named by the PYTHON environment variable (as CI sets it);
      - Git, so the build id names the commit (without it the id says "nogit");
      - network access to PyPI for the first build.
    The window is Microsoft Edge WebView2 through pywebview (and pythonnet). The WebView2
    runtime ships with Windows 11 and current Windows 10; on an older machine the user installs
    Microsoft's "Evergreen" WebView2 runtime once. Qt is never installed or bundled.

    A clean build venv (.build\venv) holds Citewise's dependencies, pywebview and PyInstaller;
    it is reinstalled only when pyproject.toml changes. A build whose BUILD_ID names the current
    source hash is not rebuilt unless -Force is given. CITEWISE_BUILD_DIR moves .build elsewhere.

    Runs under Windows PowerShell 5.1 and PowerShell 7 alike. Every native program's exit code
    is checked ($LASTEXITCODE: PowerShell does not stop on a failing native program by itself),
    and a native program's stderr is never taken for a failure (PyInstaller logs there; 5.1
    turns redirected stderr into errors that 'Stop' would make fatal).

.EXAMPLE
    powershell -ExecutionPolicy Bypass -File packaging\build.ps1
    powershell -ExecutionPolicy Bypass -File packaging\build.ps1 -Force
#>
param([switch]$Force)

$ErrorActionPreference = 'Stop'
Set-StrictMode -Version Latest

$Root = Split-Path -Parent $PSScriptRoot
Set-Location -LiteralPath $Root
$Cache = if ($env:CITEWISE_BUILD_DIR) { $env:CITEWISE_BUILD_DIR } else { Join-Path $Root '.build' }
$Venv = Join-Path $Cache 'venv'
$Python = Join-Path (Join-Path $Venv 'Scripts') 'python.exe'
$Dist = Join-Path $Cache 'dist'
$App = Join-Path $Dist 'citewise'
$IdFile = Join-Path $App 'BUILD_ID'

# Run a program and stop the build when it fails (PowerShell does not do so by itself for
# native programs).
function Invoke-Checked {
    param([string]$Program, [string[]]$Arguments)
    $ErrorActionPreference = 'Continue'  # this scope only: the exit code decides
    & $Program @Arguments
    $Code = $LASTEXITCODE
    if ($Code -ne 0) {
        throw "'$Program $($Arguments -join ' ')' failed with exit code $Code"
    }
}

New-Item -ItemType Directory -Force -Path $Cache | Out-Null

if (-not (Test-Path -LiteralPath $Python)) {
    if ($env:PYTHON) {
        Invoke-Checked $env:PYTHON @('-m', 'venv', $Venv)
    } else {
        Invoke-Checked 'py' @('-3.11', '-m', 'venv', $Venv)
    }
    Invoke-Checked $Python @('-m', 'pip', 'install', '--quiet', '--upgrade', 'pip')
}

$Wanted = (Get-FileHash -Algorithm SHA256 -LiteralPath (Join-Path $Root 'pyproject.toml')).Hash + ' pywebview'
$Stamp = Join-Path $Venv '.citewise-build-deps'
$Installed = if (Test-Path -LiteralPath $Stamp) { (Get-Content -Raw -LiteralPath $Stamp).Trim() } else { '' }
if ($Installed -ne $Wanted) {
    # Editable: the metadata (app version) is installed, the code is read from this checkout.
    # pywebview without the [qt] extra: on Windows it uses WebView2 through pythonnet.
    Invoke-Checked $Python @('-m', 'pip', 'install', '--quiet', '-e', '.[build]', 'pywebview>=5')
    Set-Content -LiteralPath $Stamp -Value $Wanted -Encoding ascii
}

# Both from the build venv's Python (packaging/build_id.py): the source hash a fresh build's
# BUILD_ID ends with, and the version in pyproject.toml.
$BuildId = Join-Path $PSScriptRoot 'build_id.py'
$Sources = (& $Python $BuildId 'sources' | Out-String).Trim()
if ($LASTEXITCODE -ne 0) { throw 'packaging\build_id.py could not hash the sources' }
$Version = (& $Python $BuildId 'version' | Out-String).Trim()
if ($LASTEXITCODE -ne 0) { throw 'packaging\build_id.py could not read the version' }
$Zip = Join-Path $Dist "Citewise-$($Version)-windows-x64.zip"
if (-not $Force -and (Test-Path -LiteralPath $IdFile) -and (Test-Path -LiteralPath $Zip)) {
    $Id = (Get-Content -Raw -LiteralPath $IdFile).Trim()
    if ($Id.EndsWith("_src$Sources")) {
        Write-Host "up to date: $App ($Id)"
        exit 0
    }
}

$Clock = [Diagnostics.Stopwatch]::StartNew()
Invoke-Checked $Python @(
    '-m', 'PyInstaller', (Join-Path $PSScriptRoot 'citewise.spec'), '--noconfirm',
    '--log-level', 'WARN', '--distpath', $Dist, '--workpath', (Join-Path $Cache 'work')
)
if (-not (Test-Path -LiteralPath $IdFile)) { throw "the build did not finish: $IdFile is missing" }

# The console launcher must at least start and name its version.
Invoke-Checked (Join-Path $App 'citewise-cli.exe') @('--version')

# What users download: the folder, zipped under Citewise-<version>\ (they unzip it and run
# Citewise.exe). Versioned folders side by side are how an older version stays installed for a
# rollback, and how `citewise version --check` finds a newer one. The folder is zipped as it is
# (packaging/release_zip.py names the top folder), never renamed.
$Built = (Get-Content -Raw -LiteralPath (Join-Path $App 'citewise-version.txt')).Trim()
if ($Built -ne $Version) { throw "the build says version $Built, pyproject.toml $Version" }
Invoke-Checked $Python @((Join-Path $PSScriptRoot 'release_zip.py'), $App, $Zip, "Citewise-$Version")
$Size = [math]::Round((Get-Item -LiteralPath $Zip).Length / 1MB)
Write-Host ("built {0} in {1:N0} s; {2} ({3} MB): {4}" -f $App, $Clock.Elapsed.TotalSeconds, $Zip, $Size, (Get-Content -Raw -LiteralPath $IdFile).Trim())
