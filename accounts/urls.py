"""/accounts/: sign up, log in, log out (POST), passwords, one's own account."""

from django.urls import path

from accounts import views, views_password

app_name = "accounts"
urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("login/", views.login, name="login"),
    path("logout/", views.logout, name="logout"),
    path("password/", views_password.password_change, name="password_change"),
    path("password/forgot/", views_password.reset_request, name="reset_request"),
    path(
        "password/reset/<int:person_id>/<str:token>/",
        views_password.reset_confirm,
        name="reset_confirm",
    ),
    path("me/", views.profile, name="profile"),
    path("me/email/", views.email_change, name="email"),
    path("me/email/again/", views.email_resend, name="email_resend"),
    path("me/sessions/", views.sessions_end, name="sessions_end"),
    path("me/calendar/", views.calendar_token, name="calendar_token"),
    path("me/delete/", views_password.delete, name="delete"),
    path("verify/<str:token>/", views.email_verify, name="verify"),
]
